#include "core/kube/quantity.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

TEST(Quantity, ParsesDecimalBinaryAndExponentFormsToMilliUnits) {
  struct Case {
    const char* text;
    int64_t milli;
  } cases[] = {{"1", 1000},     {"2", 2000},      {"500m", 500},    {"0.5", 500},
               {"1k", 1000000}, {"1Ki", 1024000}, {"1e3", 1000000}, {"1E-3", 1},
               {"+3", 3000},    {"-2", -2000},    {".5", 500},      {"1.5Gi", 1610612736000},
               {"100n", 1},     {"1u", 1},        {"0", 0},         {"3.", 3000}};
  for (const Case& c : cases) {
    auto r = ParseQuantityMilli(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message;
    EXPECT_EQ(r.value(), c.milli) << c.text;
  }
}

TEST(Quantity, RejectsTextThatIsNotAQuantity) {
  for (const char* bad : {"", "abc", "1x", "1 Gi", "--1", "1Ki2", "e3", "1e", "1e1234", "1..2"}) {
    EXPECT_FALSE(ParseQuantityMilli(bad).ok()) << bad;
  }
}

TEST(Quantity, RejectsValuesBeyondInt64MilliUnits) {
  EXPECT_FALSE(ParseQuantityMilli("10E").ok());
  EXPECT_FALSE(ParseQuantityMilli("99999999999999999999").ok());
}

// Found by the watch_event fuzz target: a 36-digit mantissa times a saturated power overflowed
// 128 bits (UBSan). Every product is now checked against the int64 range as it grows.
TEST(Quantity, HugeAndTinyExponentsAreExactOrTooLargeNeverOverflow) {
  struct Case {
    const char* text;
    int64_t milli;  // -1: "too large"
  } cases[] = {
      {"123456789012345678901234567890123456Ei", -1},
      {"999999999999999999999999999999999999e999", -1},
      {"0.00000000000000000000000000000000001e999", -1},
      {"1e-999", 1},  // positive and below one milli-unit: rounded up, as before
      {"0e999", 0},
      {"7Pi", 7881299347898368000},
      {"8Pi", 9007199254740992000},
      {"9Pi", -1},
      {"8589934Gi", 9223371401199616000},  // the largest whole number of Gi that fits
      {"8589935Gi", -1},
      {"1Ei", -1},
      {"0.0000001Ei", 115292150460685},  // 2^60 x 1000 / 10^7 milli-units, rounded up
      {"0.5Ki", 512000},
      {"1.000000000000000000000000000000001Ki", 1024001},
      {"0.000000000000000000000000000000001Ei", 1},
  };
  for (const Case& c : cases) {
    auto r = ParseQuantityMilli(c.text);
    if (c.milli < 0) {
      ASSERT_FALSE(r.ok()) << c.text;
      EXPECT_EQ(r.error().message, "quantity \"" + std::string(c.text) + "\" is too large");
    } else {
      ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message;
      EXPECT_EQ(r.value(), c.milli) << c.text;
    }
  }
}

TEST(Quantity, ExtendedResourcesMustBeWholeNonNegativeNumbers) {
  EXPECT_EQ(ParseWholeQuantity("2").value(), 2);
  EXPECT_EQ(ParseWholeQuantity("1000m").value(), 1);
  EXPECT_EQ(ParseWholeQuantity("1e1").value(), 10);
  auto half = ParseWholeQuantity("500m");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.error().message,
            "quantity \"500m\" is not a whole number, as extended resources must be");
  EXPECT_FALSE(ParseWholeQuantity("0.5").ok());
  EXPECT_FALSE(ParseWholeQuantity("-1").ok());
}

TEST(ParseMemoryMib, BareNumbersAreMibAndSuffixedOnesAreBytesRoundedUp) {
  struct Case {
    const char* text;
    int64_t mib;
  } cases[] = {
      {"16000", 16000}, {"16Gi", 16384},  {"16GiB", 16384}, {"16G", 15259},  // 16e9 / 2^20
      {"16GB", 15259},  {"512Mi", 512},   {"1M", 1},        {"20e3", 20000},
      {"0.5Gi", 512},   {"1Ti", 1048576},
  };
  for (const Case& c : cases) {
    auto r = ParseMemoryMib(c.text);
    ASSERT_TRUE(r.ok()) << c.text;
    EXPECT_EQ(r.value(), c.mib) << c.text;
  }
}

TEST(ParseMemoryMib, RejectsWhatIsNotAPositiveQuantity) {
  for (const char* bad : {"", "abc", "16 GB", "-1", "0", "0Gi", "16Xi", "GB"}) {
    EXPECT_FALSE(ParseMemoryMib(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseMemoryMib("abc").error().message, "\"abc\" is not a memory quantity");
}

}  // namespace
}  // namespace gpuadmit
