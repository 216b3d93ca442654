#include "core/sim/simulation_report.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(SimulationReport, TheMedianOfAnEvenCountIsTheMeanOfItsMiddleTwo) {
  EXPECT_EQ(Median({}), std::nullopt);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(*Median({0.004, 0.016, 0.028, 0.008}), 0.012);
  // Latency percentiles stay nearest-rank: the lower middle.
  EXPECT_EQ(Percentile({0.004, 0.016, 0.028, 0.008}, 0.5), 0.008);
}

TEST(SimulationReport, TheSummaryGivesEachRunNamesMedianAndRange) {
  std::vector<json> runs;
  for (double u : {0.016, 0.004, 0.028, 0.036}) {
    runs.push_back({{"name", "policy.yaml"}, {"unallocated_ratio_at_full_demand", u},
                    {"placed_pods", 10}});
  }
  runs.push_back({{"name", "baseline"}, {"unallocated_ratio_at_full_demand", nullptr},
                  {"placed_pods", 7}});
  json summary = SummaryJson(runs);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0]["name"], "policy.yaml");
  EXPECT_EQ(summary[0]["runs"], 4);
  EXPECT_DOUBLE_EQ(summary[0]["unallocated_ratio_at_full_demand"]["median"].get<double>(), 0.022);
  EXPECT_EQ(summary[0]["unallocated_ratio_at_full_demand"]["min"], 0.004);
  EXPECT_EQ(summary[0]["unallocated_ratio_at_full_demand"]["max"], 0.036);
  EXPECT_TRUE(summary[1]["unallocated_ratio_at_full_demand"].is_null());
  EXPECT_EQ(summary[1]["placed_pods"]["median"], 7);
}

}  // namespace
}  // namespace gpuadmit
