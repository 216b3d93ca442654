#include "core/report/time_slicing.h"

#include <gtest/gtest.h>

#include "tests/core/report/report_test_cluster.h"

namespace gpuadmit {
namespace {

using report_test::GpuNode;
using report_test::MetricsOf;

int Replicas(double utilization, std::optional<double> burstiness) {
  return RecommendedReplicas(utilization, burstiness).replicas;
}

TEST(Burstiness, IsOneMinusMeanOverMaxInPercent) {
  // Busy at 100 one point in five: mean 20, max 100, 80% bursty.
  EXPECT_EQ(BurstinessPercent({.min = 0, .max = 100, .mean = 20, .count = 5}), 80.0);
  // A steady load: mean = max.
  EXPECT_EQ(BurstinessPercent({.min = 45, .max = 45, .mean = 45, .count = 20}), 0.0);
  // 30 and 40 alternating over two points: 1 - 35/40 = 12.5%.
  EXPECT_EQ(BurstinessPercent({.min = 30, .max = 40, .mean = 35, .count = 2}), 12.5);
}

TEST(Burstiness, IsUnknownWithOnePointAndZeroForAnIdleGpu) {
  EXPECT_EQ(BurstinessPercent({.min = 10, .max = 10, .mean = 10, .count = 1}), std::nullopt);
  EXPECT_EQ(BurstinessPercent({.min = 0, .max = 0, .mean = 0, .count = 0}), std::nullopt);
  EXPECT_EQ(BurstinessPercent({.min = 0, .max = 0, .mean = 0, .count = 3}), 0.0);
}

TEST(TimeSlicingTable, EachRowOfSeed002) {
  EXPECT_EQ(Replicas(10, 80), 8);  // < 20% and > 70% bursty
  EXPECT_EQ(Replicas(30, 60), 4);  // 20-40% and > 50% bursty
  EXPECT_EQ(Replicas(50, 0), 2);   // 40-60%, any burstiness
  EXPECT_EQ(Replicas(50, 99), 2);
  EXPECT_EQ(Replicas(75, 0), 1);  // > 60%: no sharing
  EXPECT_EQ(Replicas(75, 95), 1);
  EXPECT_EQ(RecommendedReplicas(10, 80).rule, "< 20% and > 70% bursty");
  EXPECT_EQ(RecommendedReplicas(75, 0).rule, "> 60%");
}

TEST(TimeSlicingTable, UtilisationBoundariesBelongToTheBandTheyStartAndSixtyToFortyToSixty) {
  EXPECT_EQ(Replicas(19.99, 100), 8);
  EXPECT_EQ(Replicas(20, 100), 4);  // 20 is in 20-40
  EXPECT_EQ(Replicas(39.99, 100), 4);
  EXPECT_EQ(Replicas(40, 100), 2);  // 40 is in 40-60
  EXPECT_EQ(Replicas(60, 100), 2);  // "> 60%" is strict
  EXPECT_EQ(Replicas(60.01, 0), 1);
  EXPECT_EQ(Replicas(100, 0), 1);
}

TEST(TimeSlicingTable, BurstinessBoundsAreStrict) {
  EXPECT_EQ(Replicas(10, 70.01), 8);
  EXPECT_EQ(Replicas(10, 70), 4);  // not > 70: the 20-40% row's > 50% applies
  EXPECT_EQ(Replicas(30, 50.01), 4);
  EXPECT_EQ(Replicas(30, 50), 2);
}

TEST(TimeSlicingTable, WhereTheTableIsSilentTheNextRowDownApplies) {
  EXPECT_EQ(Replicas(10, 60), 4);  // < 20% but only 60% bursty: as 20-40% and > 50%
  EXPECT_EQ(Replicas(10, 30), 2);  // < 20% and steady: as 40-60%
  EXPECT_EQ(Replicas(30, 10), 2);  // 20-40% and steady
  EXPECT_EQ(Replicas(0, 0), 2);    // idle the whole window
  EXPECT_EQ(RecommendedReplicas(10, 30).rule, "<= 60%");
}

TEST(TimeSlicingTable, UnknownBurstinessSkipsTheRowsThatNeedIt) {
  EXPECT_EQ(Replicas(10, std::nullopt), 2);
  EXPECT_EQ(Replicas(30, std::nullopt), 2);
  EXPECT_EQ(Replicas(70, std::nullopt), 1);
}

TEST(AdviseTimeSlicing, OneEntryPerWholeGpuFromItsWindow) {
  NodeFacts a = GpuNode("a", 2);
  NodeFacts b = GpuNode("b", 8);
  b.labels["nvidia.com/gpu.replicas"] = "4";
  b.gpu.sharing_strategy = "time-slicing";
  // a/0: nine idle points and one at 100: mean 10, 90% bursty -> 8.
  // a/1: 50 and 50: mean 50, steady -> 2.
  // b/0: 80 and 60: mean 70 -> 1.
  auto metrics = MetricsOf(
      {{{"a", 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 100}}, {{"a", 1}, {50, 50}}, {{"b", 0}, {80, 60}}});
  std::vector<TimeSlicingAdvice> advice = AdviseTimeSlicing(std::vector<NodeFacts>{a, b}, *metrics);
  ASSERT_EQ(advice.size(), 3u);
  EXPECT_EQ(advice[0].node, "a");
  EXPECT_EQ(advice[0].gpu, 0);
  EXPECT_EQ(advice[0].points, 10u);
  EXPECT_EQ(advice[0].mean_utilization_percent, 10.0);
  EXPECT_EQ(advice[0].max_utilization_percent, 100.0);
  EXPECT_EQ(advice[0].burstiness_percent, 90.0);
  EXPECT_EQ(advice[0].recommended_replicas, 8);
  EXPECT_EQ(advice[0].current_replicas, 1);
  EXPECT_FALSE(advice[0].shared);
  EXPECT_EQ(advice[1].gpu, 1);
  EXPECT_EQ(advice[1].burstiness_percent, 0.0);
  EXPECT_EQ(advice[1].recommended_replicas, 2);
  EXPECT_EQ(advice[2].node, "b");
  EXPECT_EQ(advice[2].mean_utilization_percent, 70.0);
  EXPECT_NEAR(*advice[2].burstiness_percent, 12.5, 1e-9);  // 1 - 70/80
  EXPECT_EQ(advice[2].recommended_replicas, 1);
  EXPECT_EQ(advice[2].current_replicas, 4);
  EXPECT_TRUE(advice[2].shared);
}

TEST(AdviseTimeSlicing, MigInstancesAreLeftOutAndAGpuWithoutUtilisationHasNoAdvice) {
  GpuReading reading;
  GpuSample whole{.node = "a", .gpu = 0, .model_name = "NVIDIA A100-SXM4-40GB"};
  whole.fb_used_mib = 100;  // no utilisation
  GpuSample slice{.node = "a", .gpu = 0, .mig_instance = 1, .mig_profile = "1g.5gb"};
  slice.utilization_percent = 5;
  reading.gpus = {whole, slice};
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, MetricsTime{});
  std::vector<TimeSlicingAdvice> advice =
      AdviseTimeSlicing(std::vector<NodeFacts>{GpuNode("a", 1)}, metrics);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].points, 0u);
  EXPECT_EQ(advice[0].mean_utilization_percent, std::nullopt);
  EXPECT_EQ(advice[0].recommended_replicas, std::nullopt);
  EXPECT_EQ(advice[0].rule, "");
}

}  // namespace
}  // namespace gpuadmit
