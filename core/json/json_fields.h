// Reading fields of untrusted JSON (admitted objects, API answers) without exceptions: a missing
// key, or a value of the wrong type on the way, reads as absent.
//
//   const json& terms = At(spec, {"affinity", "nodeAffinity", "required..."});  // null if absent
//   std::string node = StringAt(pod, {"spec", "nodeName"});                    // "" if absent
//
// Thread safety: pure functions.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpuadmit {

// The value at `path` (object keys from `from`), or a null value. An empty path is `from`.
const nlohmann::json& At(const nlohmann::json& from, std::initializer_list<std::string_view> path);

// The string at `path`, or "" when it is absent or not a string.
std::string StringAt(const nlohmann::json& from, std::initializer_list<std::string_view> path);

}  // namespace gpuadmit
