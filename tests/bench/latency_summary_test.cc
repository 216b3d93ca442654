#include "bench/load/latency_summary.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuadmit::bench {
namespace {

TEST(LatencySummary, NearestRankPercentilesOfOneToAThousandInAnyOrder) {
  std::vector<uint32_t> values;
  for (uint32_t v = 1000; v >= 1; --v) values.push_back(v);
  LatencySummary s = SummarizeLatencies(values);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.p50, 500u);
  EXPECT_EQ(s.p90, 900u);
  EXPECT_EQ(s.p99, 990u);
  EXPECT_EQ(s.p999, 999u);
  EXPECT_EQ(s.max, 1000u);
  EXPECT_DOUBLE_EQ(s.mean, 500.5);
}

TEST(LatencySummary, TwoSlowAnswersInAThousandAreThePointNineNineNineButNotTheNinetyNinth) {
  std::vector<uint32_t> values(998, 100);
  values.push_back(50000);
  values.push_back(40000);
  LatencySummary s = SummarizeLatencies(values);
  EXPECT_EQ(s.p99, 100u);
  EXPECT_EQ(s.p999, 40000u);
  EXPECT_EQ(s.max, 50000u);
}

TEST(LatencySummary, OneSlowAnswerInAThousandIsOnlyTheMax) {
  std::vector<uint32_t> values(999, 100);
  values.push_back(50000);
  LatencySummary s = SummarizeLatencies(values);
  EXPECT_EQ(s.p999, 100u);
  EXPECT_EQ(s.max, 50000u);
}

TEST(LatencySummary, NothingMeasuredIsAllZero) {
  LatencySummary s = SummarizeLatencies({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50, 0u);
  EXPECT_EQ(s.p999, 0u);
  EXPECT_EQ(s.max, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.stdev, 0);
}

TEST(Percentile, OfASingleValueIsThatValueAtEveryRank) {
  std::vector<uint32_t> one{42};
  EXPECT_EQ(Percentile(one, 50), 42u);
  EXPECT_EQ(Percentile(one, 99.9), 42u);
  EXPECT_EQ(Percentile(one, 100), 42u);
}

}  // namespace
}  // namespace gpuadmit::bench
