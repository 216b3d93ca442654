// AppendJson: nlohmann::json to compact JSON text, byte for byte what json::dump() writes, for
// the patch and answer of every review. dump() decodes UTF-8 one byte at a time through a state
// machine, at about 40 instructions a byte on a 360-byte patch. This copies runs of plain ASCII and checks non-ASCII
// strings with FirstInvalidUtf8 (core/json/utf8.h), at about a fifth of that.
//
//   std::string text;
//   if (!AppendJson(patch, text)) text = patch.dump();  // dump() says what is wrong
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpuadmit {

// Appends `value` to `out` and returns true; or, when a string in it is not UTF-8 or it holds
// binary, leaves `out` as it was and returns false, for the caller to use dump() and its error
// handling. Floating-point numbers are written by dump() itself.
bool AppendJson(const nlohmann::json& value, std::string& out);

// The same for one string, quoted and escaped as dump() writes it: false, with `out` as it was,
// when `s` is not UTF-8.
bool AppendJsonString(std::string_view s, std::string& out);

}  // namespace gpuadmit
