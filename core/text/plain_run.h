// The bytes JSON and logfmt strings copy as they are, found eight at a time.
//
//   for (size_t i = PlainRun(text); i < text.size(); i += 1 + PlainRun(text.substr(i + 1))) {
//     ...escape text[i]...
//   }
//
// A review writes a few hundred bytes of such text (its log line's trail, the answer's
// messages), almost all of it plain: a byte-at-a-time scan spent four or five instructions a
// byte on it, a word at a time about one and a half.
//
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpuadmit {

// True for the bytes copied as they are: ASCII from the space up, but '"' and '\\'.
constexpr bool IsPlainByte(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

// The length of `text`'s longest prefix of plain bytes (IsPlainByte): text.size() when every
// byte is plain.
size_t PlainRun(std::string_view text);

}  // namespace gpuadmit
