// Standard base64 (RFC 4648, with padding): the answer's `patch` is its operations so encoded,
// and the apiserver decodes it so.
//
//   AppendBase64(patch.text(), answer);   // "W3sib3AiOiJhZGQiLC..."
//
// Three bytes a step, four table loads each: a review's patch is a few hundred bytes.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// `bytes` in base64.
std::string Base64Encode(std::string_view bytes);
// The same, appended to `out`.
void AppendBase64(std::string_view bytes, std::string& out);

// The bytes of standard base64 `text` (trailing '=' padding optional), as the apiserver reads
// an answer's patch; errors on a character outside the alphabet.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace gpuadmit
