#include "core/admission/base64.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace gpuadmit {
namespace {

// RFC 4648 section 4, three bytes at a time: what the word-at-a-time encoder must equal.
std::string Base64ThreeAtATime(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

TEST(Base64Encode, MatchesTheRfc4648TestVectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("\xff\xfe"), "//4=");
}

// Every digit value in every position of a word and of a 24-byte AVX2 step (each byte value at
// each of the first 60 offsets of texts of every length up to 72: two steps and what follows),
// then every length up to 300 of a text that uses all 256 byte values: as the three-at-a-time
// encoder writes them, and back again.
TEST(Base64Encode, WritesWhatThreeBytesAtATimeWriteAndDecodesBack) {
  for (size_t size = 1; size <= 72; ++size) {
    for (size_t at = 0; at < std::min<size_t>(size, 60); ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        std::string bytes(size, '\x5a');
        bytes[at] = static_cast<char>(byte);
        ASSERT_EQ(Base64Encode(bytes), Base64ThreeAtATime(bytes))
            << "size " << size << ", byte " << byte << " at " << at;
      }
    }
  }
  std::string all;
  for (int i = 0; i < 300; ++i) all += static_cast<char>((i * 167 + 13) % 256);
  for (size_t size = 0; size <= all.size(); ++size) {
    const std::string_view bytes = std::string_view(all).substr(0, size);
    const std::string text = Base64Encode(bytes);
    ASSERT_EQ(text, Base64ThreeAtATime(bytes)) << "size " << size;
    auto back = Base64Decode(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back.value(), bytes);
  }
}

TEST(AppendBase64, AppendsAfterWhatIsThere) {
  std::string out = R"({"patch":")";
  AppendBase64("foobar", out);
  EXPECT_EQ(out, R"({"patch":"Zm9vYmFy)");
}

TEST(Base64Decode, ReadsWithOrWithoutPaddingAndRefusesOtherCharacters) {
  EXPECT_EQ(Base64Decode("Zm9vYg==").value(), "foob");
  EXPECT_EQ(Base64Decode("Zm9vYg").value(), "foob");
  auto bad = Base64Decode("Zm9v*g==");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "not base64: a '*'");
}

}  // namespace
}  // namespace gpuadmit
