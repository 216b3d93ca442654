// Text helpers shared by the generated objects' renderers (scale_node.cc, scale_pod.cc): every
// detail is derived from ScaleHash(index, purpose), so renders are reproducible.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "bench/scale/scale_objects.h"

namespace gpuadmit::bench::text {

// The characters Kubernetes uses for generated name suffixes (no vowels, no confusable digits).
constexpr std::string_view kNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

inline void AppendSuffix(std::string& out, uint64_t value, int length) {
  for (int i = 0; i < length; ++i) {
    out += kNameAlphabet[value % kNameAlphabet.size()];
    value /= kNameAlphabet.size();
  }
}

inline void AppendHex(std::string& out, uint64_t seed, int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < length; ++i) {
    if (i % 16 == 0) seed = ScaleHash(seed, static_cast<uint64_t>(i));
    out += kDigits[(seed >> (4 * (i % 16))) & 15];
  }
}

inline std::string Uuid(uint64_t seed) {
  std::string hex;
  AppendHex(hex, seed, 32);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-4" + hex.substr(13, 3) + "-a" +
         hex.substr(17, 3) + "-" + hex.substr(20, 12);
}

// An RFC 3339 time in 2025-05/06, from a seed.
inline std::string Time(uint64_t seed, bool june) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2025-%02d-%02dT%02d:%02d:%02dZ", june ? 6 : 5,
                static_cast<int>(1 + seed % 28), static_cast<int>((seed >> 8) % 24),
                static_cast<int>((seed >> 16) % 60), static_cast<int>((seed >> 24) % 60));
  return buf;
}

inline std::string Ip(int a, uint64_t index) {
  return "10." + std::to_string(a + ((index >> 16) & 63)) + "." +
         std::to_string((index >> 8) & 255) + "." + std::to_string(index & 255);
}

}  // namespace gpuadmit::bench::text
