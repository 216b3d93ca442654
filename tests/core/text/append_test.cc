#include "core/text/append.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace gpuadmit {
namespace {

TEST(AppendAll, AppendsEveryPartInOrderAfterWhatIsThere) {
  std::string line = "placement (";
  AppendAll(line, {"first-fit", "): ", "", "gpu-1", " for ", Digits(2)});
  EXPECT_EQ(line, "placement (first-fit): gpu-1 for 2");
  AppendAll(line, {});
  EXPECT_EQ(line, "placement (first-fit): gpu-1 for 2");
}

TEST(AppendAll, GrowsOnceWhenTheLineOutgrowsItsBuffer) {
  std::string line(10, 'x');
  const std::string long_part(1000, 'y');
  AppendAll(line, {long_part, long_part});
  EXPECT_EQ(line.size(), 2010u);
  EXPECT_EQ(line.substr(0, 11), "xxxxxxxxxxy");
  EXPECT_EQ(line.back(), 'y');
}

TEST(Joined, JoinsPartsIntoANewString) {
  EXPECT_EQ(Joined({"a", "", "bc", Digits(-7)}), "abc-7");
  EXPECT_EQ(Joined({}), "");
}

TEST(Digits, WritesEveryInt64AsDecimal) {
  EXPECT_EQ(std::string_view(Digits(0)), "0");
  EXPECT_EQ(std::string_view(Digits(100)), "100");
  EXPECT_EQ(std::string_view(Digits(-42)), "-42");
  EXPECT_EQ(std::string_view(Digits(std::numeric_limits<int64_t>::max())), "9223372036854775807");
  EXPECT_EQ(std::string_view(Digits(std::numeric_limits<int64_t>::min())), "-9223372036854775808");
}

}  // namespace
}  // namespace gpuadmit
