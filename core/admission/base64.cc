#include "core/admission/base64.h"

#include <cstdint>

namespace gpuadmit {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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
