#include "core/text/plain_run.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace gpuadmit {
namespace {

constexpr uint64_t kEachByte = 0x0101010101010101;  // times a byte: that byte in all eight
constexpr uint64_t kHighBits = 0x8080808080808080;

// The high bit of each byte of `word` below `limit` (at most 0x80), and maybe of bytes above
// such a byte: a borrow only starts at a byte that is below the limit itself. So the lowest
// bit set marks the first byte below the limit, and none is set when no byte is.
constexpr uint64_t BytesBelow(uint64_t word, unsigned char limit) {
  return (word - kEachByte * limit) & ~word & kHighBits;
}

// The high bit of each byte of `word` that is not plain, and maybe of bytes above the first.
constexpr uint64_t NotPlain(uint64_t word) {
  return BytesBelow(word, 0x20) | (word & kHighBits) |  // controls; 0x80 and up
         BytesBelow(word ^ (kEachByte * '"'), 1) |      // '"'
         BytesBelow(word ^ (kEachByte * '\\'), 1);      // '\\'
}

}  // namespace

size_t PlainRun(std::string_view text) {
  const char* p = text.data();
  const size_t n = text.size();
  size_t i = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
      uint64_t word;
      std::memcpy(&word, p + i, sizeof word);
      if (uint64_t stops = NotPlain(word); stops != 0) {
        return i + static_cast<size_t>(std::countr_zero(stops)) / 8;
      }
    }
  }
  while (i < n && IsPlainByte(static_cast<unsigned char>(p[i]))) ++i;
  return i;
}

}  // namespace gpuadmit
