// YAML text to JSON values, so the cluster file (`kubectl get nodes,pods -A -o yaml`) and other
// YAML inputs share the JSON code paths. Plain scalars follow the YAML 1.2 core schema (null,
// true/false, integers, floats); quoted scalars stay strings, as kubectl writes quantities.
//
//   auto doc = YamlToJson("items: []");  // {"items": []}
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// Converts the first YAML document of `text`. Errors carry "line:column: reason".
Result<nlohmann::json> YamlToJson(std::string_view text);

}  // namespace gpuadmit
