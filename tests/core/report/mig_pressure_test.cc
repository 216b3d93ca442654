#include "core/report/mig_pressure.h"

#include <gtest/gtest.h>

#include "tests/core/report/report_test_cluster.h"

namespace gpuadmit {
namespace {

using report_test::GpuNode;
using report_test::GpuPod;

// What gpuadmit's /metrics says after 16 fallbacks and 5 exhausted MIG decisions.
constexpr char kScrape[] = R"(# HELP gpuadmit_mig_fallbacks_total Pods given a smaller MIG profile
# TYPE gpuadmit_mig_fallbacks_total counter
gpuadmit_mig_fallbacks_total{from_profile="2g.20gb",to_profile="1g.10gb"} 12
gpuadmit_mig_fallbacks_total{from_profile="3g.40gb",to_profile="1g.10gb"} 1
gpuadmit_mig_fallbacks_total{from_profile="3g.40gb",to_profile="2g.20gb"} 3
gpuadmit_decisions_total{stage="mig_fallback",outcome="fallback"} 16
gpuadmit_decisions_total{stage="mig_fallback",outcome="exhausted"} 5
gpuadmit_decisions_total{stage="placement",outcome="none"} 7
)";

TEST(MigPressureFromSamples, ReadsTheFallbackPairsAndTheExhaustedTotal) {
  MigPressureCounters c = MigPressureFromSamples(ParseExposition(kScrape).samples);
  EXPECT_EQ(c, (MigPressureCounters{.fallbacks = {{"2g.20gb", "1g.10gb", 12},
                                                  {"3g.40gb", "1g.10gb", 1},
                                                  {"3g.40gb", "2g.20gb", 3}},
                                    .exhausted_by_profile = {},
                                    .exhausted_total = 5}));
}

TEST(MigPressureFromSamples, AddsUpAPairWrittenTwice) {
  std::string two = std::string(kScrape) +
                    "gpuadmit_mig_fallbacks_total{from_profile=\"2g.20gb\",to_profile=\"1g.10gb\"} "
                    "8\n";
  MigPressureCounters c = MigPressureFromSamples(ParseExposition(two).samples);
  ASSERT_EQ(c.fallbacks.size(), 3u);
  EXPECT_EQ(c.fallbacks[0].count, 20u);
}

TEST(MigPressure, ProfilesByFallbacksWithTheirShareWhatTheyGotAndWhatIsFreeNow) {
  NodeFacts n1 = GpuNode("n1", 0);
  n1.allocatable = {
      {"nvidia.com/mig-1g.10gb", 3}, {"nvidia.com/mig-2g.20gb", 3}, {"nvidia.com/mig-3g.40gb", 1}};
  NodeFacts cordoned = n1;
  cordoned.name = "n2";
  cordoned.unschedulable = true;  // its instances are not counted
  ReportPod p = GpuPod("ml/p", "n1", 0);
  p.need = {{"nvidia.com/mig-2g.20gb", 3}};
  ReportPod done = p;
  done.key = "ml/done";
  done.terminal = true;
  MigPressureCounters counters = MigPressureFromSamples(ParseExposition(kScrape).samples);
  counters.exhausted_by_profile["3g.40gb"] = 2;
  std::vector<MigProfilePressure> rows =
      MigPressure(counters, std::vector<NodeFacts>{n1, cordoned}, std::vector<ReportPod>{p, done});
  ASSERT_EQ(rows.size(), 2u);
  // 2g.20gb: 12 of 16 fallbacks = 75%, all to 1g.10gb; 3 allocatable, 3 taken.
  EXPECT_EQ(rows[0].profile, "2g.20gb");
  EXPECT_EQ(rows[0].fallbacks, 12u);
  EXPECT_DOUBLE_EQ(rows[0].share_percent, 75);
  EXPECT_EQ(rows[0].given, (std::vector<std::pair<std::string, uint64_t>>{{"1g.10gb", 12}}));
  EXPECT_EQ(rows[0].allocatable_now, 3);
  EXPECT_EQ(rows[0].free_now, 0);
  EXPECT_EQ(rows[0].exhausted, std::nullopt);
  // 3g.40gb: 4 = 25%, 2g.20gb (3) before 1g.10gb (1); 1 allocatable, free.
  EXPECT_EQ(rows[1].profile, "3g.40gb");
  EXPECT_EQ(rows[1].fallbacks, 4u);
  EXPECT_DOUBLE_EQ(rows[1].share_percent, 25);
  EXPECT_EQ(rows[1].given,
            (std::vector<std::pair<std::string, uint64_t>>{{"2g.20gb", 3}, {"1g.10gb", 1}}));
  EXPECT_EQ(rows[1].exhausted, 2u);
  EXPECT_EQ(rows[1].allocatable_now, 1);
  EXPECT_EQ(rows[1].free_now, 1);
}

TEST(MigPressure, NoCountersNoRows) {
  EXPECT_TRUE(MigPressure({}, std::vector<NodeFacts>{GpuNode("a", 1)}, {}).empty());
}

}  // namespace
}  // namespace gpuadmit
