#include "core/inventory/gpu_availability.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using testing::DcgmGpu;
using testing::MetricsOf;

GpuSample Device(std::optional<double> utilization, std::optional<double> used,
                 std::optional<double> free) {
  GpuSample d;
  d.gpu = 0;
  d.utilization_percent = utilization;
  d.fb_used_mib = used;
  d.fb_free_mib = free;
  return d;
}

TEST(GpuAvailability, ScoreIsSixTenthsFreeMemoryAndFourTenthsIdle) {
  // 0.6 x 12000/16000 + 0.4 x (100 - 20)/100 = 0.45 + 0.32.
  EXPECT_DOUBLE_EQ(AvailabilityScore(Device(20, 4000, 12000), {}), 0.77);
  EXPECT_DOUBLE_EQ(AvailabilityScore(Device(20, 4000, 12000), {.memory = 1, .idle = 0}), 0.75);
  // What the exporter does not report counts as free and idle; utilisation is clamped to 100.
  EXPECT_DOUBLE_EQ(AvailabilityScore(Device(std::nullopt, std::nullopt, std::nullopt), {}), 1.0);
  EXPECT_DOUBLE_EQ(AvailabilityScore(Device(130, 16000, 0), {}), 0.0);
}

TEST(GpuAvailability, TheFilterWantsFreeMemoryAtLeastAndUtilisationAtMost) {
  DeviceFilter filter{.min_free_mib = 8000, .max_utilization_percent = 50};
  EXPECT_TRUE(filter.Active());
  EXPECT_FALSE(DeviceFilter{}.Active());
  EXPECT_TRUE(PassesFilter(Device(50, 8000, 8000), filter));  // both bounds are inclusive
  EXPECT_FALSE(PassesFilter(Device(50.5, 8000, 8000), filter));
  EXPECT_FALSE(PassesFilter(Device(10, 8001, 7999), filter));
  EXPECT_TRUE(PassesFilter(Device(std::nullopt, std::nullopt, std::nullopt), filter));
  EXPECT_TRUE(PassesFilter(Device(99, 16000, 0), DeviceFilter{}));
  EXPECT_EQ(Describe(filter), "free memory >= 8000 MiB, utilisation <= 50%");
  EXPECT_EQ(Describe({.max_utilization_percent = 12.5}), "utilisation <= 12.5%");
}

TEST(GpuAvailability, BestDevicesAveragesTheBestPassingOnesAndCountsUnreportedAsPassing) {
  std::string text = DcgmGpu("n", 0, 0, 0, 16000) + DcgmGpu("n", 1, 50, 8000, 8000) +
                     DcgmGpu("n", 2, 100, 16000, 0);
  ClusterGpuMetrics metrics = MetricsOf(text);
  const NodeGpuMetrics* node = metrics.FindNode("n");
  ASSERT_NE(node, nullptr);
  // Scores 1.0, 0.5 and 0; a fourth allocatable GPU is not reported: 1.0.
  DeviceAvailability a = BestDevices(node, 4, "", {}, {}, 2);
  EXPECT_EQ(a.passing, 4);
  EXPECT_DOUBLE_EQ(a.score, 1.0);
  EXPECT_DOUBLE_EQ(BestDevices(node, 4, "", {}, {}, 3).score, 2.5 / 3);
  // The filter drops GPU 2; asking more than pass averages those that do.
  DeviceFilter filter{.min_free_mib = 8000, .max_utilization_percent = 50};
  a = BestDevices(node, 4, "", filter, {}, 4);
  EXPECT_EQ(a.passing, 3);
  EXPECT_DOUBLE_EQ(a.score, 2.5 / 3);
  // Without metrics every allocatable device passes and scores the weights' sum.
  a = BestDevices(nullptr, 8, "", filter, {.memory = 0.7, .idle = 0.3}, 2);
  EXPECT_EQ(a.passing, 8);
  EXPECT_DOUBLE_EQ(a.score, 1.0);
  EXPECT_EQ(BestDevices(node, 0, "", {}, {}, 1).passing, 0);
  // A MIG profile counts that profile's instances only: none reported, so all four pass.
  EXPECT_EQ(BestDevices(node, 4, "1g.10gb", filter, {}, 4).passing, 4);
}

}  // namespace
}  // namespace gpuadmit
