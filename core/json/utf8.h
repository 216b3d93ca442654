// FirstInvalidUtf8: where a text stops being UTF-8, for the writer's check of the strings it
// copies and for the reader's words when it refuses a document.
//
//   if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) -> byte `bad`
//
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpuadmit {

// The offset of the first byte of `text` that breaks UTF-8 (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or std::string_view::npos when it is all UTF-8.
size_t FirstInvalidUtf8(std::string_view text);

}  // namespace gpuadmit
