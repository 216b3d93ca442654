#include "bench/load/host_steal.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuadmit::bench {
namespace {

TEST(ParseCpuTicks, ReadsStealAndTheTotalOfTheFirstEightFields) {
  auto t = ParseCpuTicks("cpu  100 2 30 4000 5 6 7 80 9 10\ncpu0 50 1 15 2000 2 3 3 40 0 0\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->steal, 80u);
  EXPECT_EQ(t->total, 100u + 2 + 30 + 4000 + 5 + 6 + 7 + 80);  // guest is in user already
}

TEST(ParseCpuTicks, RefusesWhatIsNotTheAggregateLineWithASteal) {
  EXPECT_EQ(ParseCpuTicks(""), std::nullopt);
  EXPECT_EQ(ParseCpuTicks("cpu0 1 2 3 4 5 6 7 8"), std::nullopt);  // one CPU's, not all
  EXPECT_EQ(ParseCpuTicks("cpu  1 2 3 4 5 6 7"), std::nullopt);    // no steal field
  EXPECT_EQ(ParseCpuTicks("cpu  1 2 x 4 5 6 7 8"), std::nullopt);
  EXPECT_EQ(ParseCpuTicks("cpu  1 2 -3 4 5 6 7 8"), std::nullopt);
}

TEST(StealPercent, IsStealOverAllTicksBetweenTwoReads) {
  EXPECT_DOUBLE_EQ(*StealPercent({10, 1000}, {15, 1100}), 5.0);
  EXPECT_DOUBLE_EQ(*StealPercent({10, 1000}, {10, 1200}), 0.0);
  EXPECT_EQ(StealPercent({10, 1000}, {10, 1000}), std::nullopt);  // no time passed
  EXPECT_EQ(StealPercent({10, 1000}, {9, 1100}), std::nullopt);   // counters went back
}

TEST(ReadCpuTicks, ReadsAFileAndSaysWhenThereIsNone) {
  std::string path = testing::TempDir() + "/gpuadmit-stat-test";
  std::ofstream(path) << "cpu  1 2 3 4 5 6 7 8 0 0\nintr 5\n";
  auto t = ReadCpuTicks(path.c_str());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->steal, 8u);
  EXPECT_EQ(t->total, 36u);
  std::filesystem::remove(path);
  EXPECT_EQ(ReadCpuTicks(path.c_str()), std::nullopt);
}

}  // namespace
}  // namespace gpuadmit::bench
