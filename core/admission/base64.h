// Standard base64 (RFC 4648, with padding): the answer's `patch` is its operations so encoded,
// and the apiserver decodes it so.
//
//   AppendBase64(patch.text(), answer);   // "W3sib3AiOiJhZGQiLC..."
//
// Encoding takes 24 bytes a step with AVX2 where the CPU has it, then six bytes a step as one
// 64-bit word: a review's patch is a few hundred bytes, and three at a time with four table
// loads each cost it 11 instructions a byte, six at a time about 7.
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
