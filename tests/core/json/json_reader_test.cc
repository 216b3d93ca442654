#include "core/json/json_reader.h"

#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(ParseJson, BuildsTheSameDomAsNlohmannForRealDocuments) {
  for (const char* file :
       {"bench/fixtures/pod-review-3k.json", "manifests/examples/demo-cluster.json",
        "tests/fixtures/admission/v1-pod-create-sleep-100ms.json"}) {
    std::string text = testing::ReadSourceFile(file);
    auto ours = ParseJson(text);
    ASSERT_TRUE(ours.ok()) << file << ": " << ours.error().message;
    EXPECT_EQ(ours.value(), json::parse(text)) << file;
  }
}

// Found by the watch_event fuzz target: a zero significand with a large exponent.
TEST(ParseJson, AZeroWithALargeExponentIsZero) {
  auto doc = ParseJson(R"([0e111, 0.0e-400, -0E+5])");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc.value(), nlohmann::json::parse("[0.0, 0.0, -0.0]"));
}

TEST(ParseJson, KeepsNumberKindsAndTheLastOfDuplicateKeys) {
  auto doc = ParseJson(R"({"a":1,"b":-2,"c":1.5,"d":18446744073709551615,"e":1e400,"a":3})");
  ASSERT_FALSE(doc.ok());  // 1e400 is out of double range
  doc = ParseJson(R"({"a":1,"b":-2,"c":1.5,"d":18446744073709551615,"a":3,"s":"\u00e9"})");
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(doc.value()["a"].is_number_unsigned());
  EXPECT_EQ(doc.value()["a"], 3);
  EXPECT_TRUE(doc.value()["b"].is_number_integer());
  EXPECT_TRUE(doc.value()["c"].is_number_float());
  EXPECT_EQ(doc.value()["d"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(doc.value()["s"], "\xc3\xa9");
}

TEST(ParseJson, RefusesDeepNestingInvalidUtf8AndTrailingGarbage) {
  EXPECT_EQ(ParseJson(std::string(513, '[') + std::string(513, ']')).error().message,
            "JSON nests deeper than 512 levels");
  EXPECT_TRUE(ParseJson(std::string(512, '[') + std::string(512, ']')).ok());
  EXPECT_EQ(ParseJson("\"\xff\"").error().message, "invalid JSON at byte 1: invalid UTF-8");
  EXPECT_EQ(ParseJson("{} x").error().message,
            "invalid JSON: The JSON document has an improper structure: missing or superfluous "
            "commas, braces, missing keys, etc.");
  EXPECT_EQ(ParseJson("").error().message, "invalid JSON: Empty: no JSON found");
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(ParseJson, AcceptsEveryValidUtf8FormAndNamesTheFirstBadByte) {
  // 2, 3 and 4 byte forms, at the edges of the valid ranges, amid ASCII runs of 8+ bytes.
  EXPECT_TRUE(ParseJson("\"abcdefgh\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xef\xbf\xbf"
                        "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"
                        "abcdefgh\"")
                  .ok());
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"\"\xc0\xaf\"", "invalid JSON at byte 1: invalid UTF-8"},             // overlong '/'
      {"\"\xe0\x80\xaf\"", "invalid JSON at byte 1: invalid UTF-8"},         // overlong 3-byte
      {"\"\xed\xa0\x80\"", "invalid JSON at byte 1: invalid UTF-8"},         // surrogate
      {"\"\xf4\x90\x80\x80\"", "invalid JSON at byte 1: invalid UTF-8"},     // above U+10FFFF
      {"\"abcdefghij\xe2\x82\"", "invalid JSON at byte 11: invalid UTF-8"},  // truncated
      {"\"\x80\"", "invalid JSON at byte 1: invalid UTF-8"},                 // lone continuation
  };
  for (const Case& c : cases) {
    auto doc = ParseJson(c.text);
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_EQ(doc.error().message, c.error);
  }
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

// A lone surrogate decoded would be bytes that are not UTF-8, and the answer then could not echo
// the uid it was given.
TEST(ParseJson, RefusesAnEscapedLoneSurrogateAndKeepsProperPairs) {
  for (std::string_view text : {R"({"uid":"a\udfee"})", R"({"\udc00":1})", R"(["\ud800x"])"}) {
    auto doc = ParseJson(text);
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_EQ(doc.error().message, "invalid JSON: Problem while parsing a string") << text;
  }
  auto pair = ParseJson(R"(["\ud83d\ude00"])");
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  EXPECT_EQ(pair.value()[0], "\xF0\x9F\x98\x80");
}

TEST(ParseJson, ARawNulIsAnErrorNotTheEndOfTheDocument) {
  EXPECT_EQ(ParseJson(std::string("{}\0{\"x\":1}", 10)).error().message,
            "invalid JSON at byte 2: NUL byte");
}

// JSON allows no raw control character inside a string, however long (a parser scanning 16
// bytes at a time once let 0x1A-0x1F through).
TEST(ParseJson, RefusesUnescapedControlCharactersInLongStrings) {
  for (char c : {'\x01', '\x1a', '\x1b', '\x1f'}) {
    std::string text = "{\"uid\":\"04dc7a5e-e1f1-4e3" + std::string(20, c) + "4-8d65\"}";
    auto doc = ParseJson(text);
    ASSERT_FALSE(doc.ok()) << static_cast<int>(c);
    EXPECT_EQ(doc.error().message, "invalid JSON at byte 25: an unescaped control character");
  }
  EXPECT_TRUE(ParseJson("{\t\"a\":\r\n1}").ok());  // whitespace outside strings
}

}  // namespace
}  // namespace gpuadmit
