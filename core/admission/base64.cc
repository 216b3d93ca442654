#include "core/admission/base64.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace gpuadmit {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr uint64_t kEachByte = 0x0101010101010101;  // times a byte: that byte in all eight

// 1 in each byte of `sextets` (each below 64) that is at least `floor`, 0 in the others. A byte
// plus 128 - floor stays below 256, so no carry crosses into the next.
constexpr uint64_t AtLeast(uint64_t sextets, uint64_t floor) {
  return ((sextets + kEachByte * (128 - floor)) >> 7) & kEachByte;
}

// The eight digits of the six bytes at `in` (it reads eight), as a word whose bytes, in memory
// order on a little-endian machine, are those digits.
uint64_t EightDigits(const uint8_t* in) {
  uint64_t word;
  std::memcpy(&word, in, sizeof word);
  word = __builtin_bswap64(word) >> 16;  // the six bytes, the first in bits 40-47
  // The first three bytes in the low 32 bits, the next three in the high; in each half, the
  // 24 bits' four sextets into its four bytes, the first sextet in the lowest byte.
  const uint64_t halves = (word >> 24) | ((word & 0xFFFFFF) << 32);
  const uint64_t sextets =
      ((halves >> 18) & 0x0000003F0000003F) | ((halves >> 4) & 0x00003F0000003F00) |
      ((halves << 10) & 0x003F0000003F0000) | ((halves << 24) & 0x3F0000003F000000);
  // A sextet v is 'A' + v below 26, 'a' + v - 26 below 52, '0' + v - 52 below 62, then '+' and
  // '/': 65 added, then corrected range by range. Each byte stays within 0-255 at every step,
  // so the bytes do not disturb each other.
  return sextets + kEachByte * 'A' + AtLeast(sextets, 26) * 6 - AtLeast(sextets, 52) * 75 -
         AtLeast(sextets, 62) * 15 + AtLeast(sextets, 63) * 3;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  AppendBase64(bytes, out);
  return out;
}

void AppendBase64(std::string_view bytes, std::string& out) {
  const char* kAlphabet = kBase64Alphabet.data();
  size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4, '=');
  const auto* in = reinterpret_cast<const uint8_t*>(bytes.data());
  char* to = out.data() + start;
  size_t i = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; i + 8 <= bytes.size(); i += 6, to += 8) {
      const uint64_t digits = EightDigits(in + i);
      std::memcpy(to, &digits, sizeof digits);
    }
  }
  for (; i + 2 < bytes.size(); i += 3, to += 4) {
    uint32_t n = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
    to[0] = kAlphabet[(n >> 18) & 63];
    to[1] = kAlphabet[(n >> 12) & 63];
    to[2] = kAlphabet[(n >> 6) & 63];
    to[3] = kAlphabet[n & 63];
  }
  if (size_t rest = bytes.size() - i; rest > 0) {  // the padding '=' is already there
    uint32_t n = in[i] << 16;
    if (rest == 2) n |= in[i + 1] << 8;
    to[0] = kAlphabet[(n >> 18) & 63];
    to[1] = kAlphabet[(n >> 12) & 63];
    if (rest == 2) to[2] = kAlphabet[(n >> 6) & 63];
  }
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int have = 0;
  size_t end = text.find_last_not_of('=');
  text = text.substr(0, end == std::string_view::npos ? 0 : end + 1);
  for (char c : text) {
    size_t v = kBase64Alphabet.find(c);
    if (v == std::string_view::npos) return Error{"not base64: a '" + std::string(1, c) + "'"};
    bits = (bits << 6) | static_cast<uint32_t>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      out.push_back(static_cast<char>((bits >> have) & 0xFF));
    }
  }
  return out;
}

}  // namespace gpuadmit
