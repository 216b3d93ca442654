#include "core/admission/base64.h"

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// 24 bytes a step into 32 digits, with AVX2: Mula and Lemire's encoding ("Faster Base64
// Encoding and Decoding using AVX2 Instructions", 2018). Encodes whole steps while 32 bytes can
// be loaded and returns how many bytes it encoded; the caller encodes the rest.
[[gnu::target("avx2")]] size_t EncodeSteps(const uint8_t* in, size_t size, char* to) {
  size_t i = 0;
  for (; i + 32 <= size; i += 24, to += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    // Bytes 0-11 to positions 4-15 of the low lane, 12-23 to positions 0-11 of the high one.
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
    // Each three bytes' 16-bit halves, big-endian, in the four bytes their digits will fill.
    v = _mm256_shuffle_epi8(
        v, _mm256_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1, 14, 15, 13, 14, 11,
                           12, 10, 11, 8, 9, 7, 8, 5, 6, 4, 5));
    // The four sextets into the low six bits of the four bytes, by multiplies as shifts.
    const __m256i high = _mm256_mulhi_epu16(_mm256_and_si256(v, _mm256_set1_epi32(0x0FC0FC00)),
                                            _mm256_set1_epi32(0x04000040));
    const __m256i low = _mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi32(0x003F03F0)),
                                           _mm256_set1_epi32(0x01000010));
    const __m256i sextets = _mm256_or_si256(high, low);
    // Each sextet's range picks what is added to it: 'A', 'a' - 26, '0' - 52, '+' - 62, '/' - 63.
    const __m256i add =
        _mm256_setr_epi8(65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0, 65, 71, -4,
                         -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0);
    __m256i range = _mm256_subs_epu8(sextets, _mm256_set1_epi8(51));  // 0 below 52, then 1-12
    range = _mm256_sub_epi8(range, _mm256_cmpgt_epi8(sextets, _mm256_set1_epi8(25)));
    const __m256i digits = _mm256_add_epi8(sextets, _mm256_shuffle_epi8(add, range));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), digits);
  }
  return i;
}

// Read once. __builtin_cpu_init first: this may run before the library's own constructors.
const bool kHasAvx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
#endif

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
#if defined(__x86_64__)
  if (kHasAvx2) {
    i = EncodeSteps(in, bytes.size(), to);
    to += i / 3 * 4;
  }
#endif
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
