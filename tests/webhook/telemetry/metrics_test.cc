#include "webhook/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuadmit {
namespace {

TEST(Metrics, BuildInfoAndCertificateExpiryAreGaugesOnlyOnceSet) {
  Metrics metrics;
  std::string before = metrics.Render();
  EXPECT_EQ(before.find("gpuadmit_build_info"), std::string::npos);
  EXPECT_EQ(before.find("gpuadmit_certificate_expiry_timestamp_seconds"), std::string::npos);

  metrics.SetBuildInfo(R"(version="0.1.0",revision="abc")");
  metrics.SetCertificateExpiry(1795000000);
  std::string after = metrics.Render();
  EXPECT_NE(after.find("# TYPE gpuadmit_build_info gauge\n"
                       "gpuadmit_build_info{version=\"0.1.0\",revision=\"abc\"} 1\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("# TYPE gpuadmit_certificate_expiry_timestamp_seconds gauge\n"
                       "gpuadmit_certificate_expiry_timestamp_seconds 1795000000\n"),
            std::string::npos)
      << after;

  metrics.SetCertificateExpiry(1796000000);  // a reload that took
  EXPECT_NE(metrics.Render().find("gpuadmit_certificate_expiry_timestamp_seconds 1796000000\n"),
            std::string::npos);
}

TEST(Metrics, EveryDecisionSeriesIsRenderedAtZeroFromTheStart) {
  std::string text = Metrics().Render();
  EXPECT_NE(text.find("# TYPE gpuadmit_decisions_total counter\n"
                      "gpuadmit_decisions_total{stage=\"requirements\",outcome=\"filled\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"requirements\",outcome=\"corrected\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"requirements\",outcome=\"warned\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"sharing\",outcome=\"applied\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"sharing\",outcome=\"not_applied\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"mig_fallback\",outcome=\"fallback\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"mig_fallback\",outcome=\"exhausted\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"queue\",outcome=\"gated\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"placement\",outcome=\"chosen\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"placement\",outcome=\"none\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"placement\",outcome=\"no_idle\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"review\",outcome=\"denied\"} 0\n"
                      "gpuadmit_decisions_total{stage=\"review\",outcome=\"skipped_stale\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE gpuadmit_sharing_mode_applied_total counter\n"
                      "gpuadmit_sharing_mode_applied_total{mode=\"exclusive\"} 0\n"
                      "gpuadmit_sharing_mode_applied_total{mode=\"mig\"} 0\n"
                      "gpuadmit_sharing_mode_applied_total{mode=\"mps\"} 0\n"
                      "gpuadmit_sharing_mode_applied_total{mode=\"time-slicing\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE gpuadmit_mig_eligible_pods_total counter\n"
                      "gpuadmit_mig_eligible_pods_total 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE gpuadmit_estimated_gpu_savings_total counter\n"
                      "gpuadmit_estimated_gpu_savings_total 0\n"),
            std::string::npos)
      << text;
  // Its pairs are not known in advance: the family is declared, with no series yet.
  EXPECT_NE(text.find("# TYPE gpuadmit_mig_fallbacks_total counter\n# HELP"), std::string::npos)
      << text;
}

TEST(Metrics, EstimatedSavingsAreCountedInMillionthsAndShownInGpus) {
  Metrics metrics;
  metrics.Add(Counter::kGpuSavingsMicro, 857'143);  // 1g.10gb instead of a whole GPU
  metrics.Add(Counter::kGpuSavingsMicro, 750'000);  // a replica of a GPU shared four ways
  EXPECT_EQ(metrics.Value(Counter::kGpuSavingsMicro), 1'607'143u);
  EXPECT_NE(metrics.Render().find("\ngpuadmit_estimated_gpu_savings_total 1.607143\n"),
            std::string::npos);
}

TEST(Metrics, MigFallbackPairsAreRenderedSortedWithTheirCounts) {
  Metrics metrics;
  metrics.IncMigFallback("3g.40gb", "2g.20gb");
  metrics.IncMigFallback("2g.20gb", "1g.10gb");
  metrics.IncMigFallback("2g.20gb", "1g.10gb");
  metrics.IncMigFallback("2g.20gb", "1g.5gb");
  EXPECT_EQ(metrics.MigFallbacks("2g.20gb", "1g.10gb"), 2u);
  EXPECT_EQ(metrics.MigFallbacks("1g.10gb", "2g.20gb"), 0u);
  std::string text = metrics.Render();
  EXPECT_NE(text.find("# TYPE gpuadmit_mig_fallbacks_total counter\n"
                      "gpuadmit_mig_fallbacks_total{from_profile=\"2g.20gb\",to_profile=\"1g."
                      "10gb\"} 2\n"
                      "gpuadmit_mig_fallbacks_total{from_profile=\"2g.20gb\",to_profile=\"1g.5gb\"}"
                      " 1\n"
                      "gpuadmit_mig_fallbacks_total{from_profile=\"3g.40gb\",to_profile=\"2g."
                      "20gb\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, MigFallbackPairsBeyondTheBoundCountAsOther) {
  Metrics metrics;
  for (size_t i = 0; i < Metrics::kMaxMigFallbackPairs; ++i) {
    metrics.IncMigFallback(std::to_string(i + 2) + "g.20gb", "1g.10gb");
  }
  metrics.IncMigFallback("9g.90gb", "1g.10gb");
  metrics.IncMigFallback("9g.90gb", "2g.20gb");
  metrics.IncMigFallback("2g.20gb", "1g.10gb");  // a pair already counted keeps its series
  EXPECT_EQ(metrics.MigFallbacks("9g.90gb", "1g.10gb"), 0u);
  EXPECT_EQ(metrics.MigFallbacks("other", "other"), 2u);
  EXPECT_EQ(metrics.MigFallbacks("2g.20gb", "1g.10gb"), 2u);
  std::string text = metrics.Render();
  size_t series = 0;
  for (size_t at = text.find("\ngpuadmit_mig_fallbacks_total{"); at != std::string::npos;
       at = text.find("\ngpuadmit_mig_fallbacks_total{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, Metrics::kMaxMigFallbackPairs + 1);
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(Metrics, InventoryGaugesAreAbsentUntilASnapshotAndThenRenderedAsSet) {
  Metrics m;
  EXPECT_EQ(m.Render().find("gpuadmit_cluster_resource"), std::string::npos);
  EXPECT_EQ(m.Render().find("gpuadmit_inventory_last_update"), std::string::npos);

  std::vector<Metrics::ResourceSeries> resources = {{"", "nvidia.com/mig-2g.20gb", 12, 5, 1, 2, 4}};
  std::vector<Metrics::StrandedSeries> stranded = {{"", "1g.10gb", 3}, {"", "2g.20gb", 0}};
  m.SetInventory(resources, stranded, 1700000000);
  std::string text = m.Render();
  for (const char* line : {
           "# TYPE gpuadmit_cluster_resource_allocatable gauge\n",
           "gpuadmit_cluster_resource_allocatable{resource=\"nvidia.com/mig-2g.20gb\"} 12\n",
           "gpuadmit_cluster_resource_used{resource=\"nvidia.com/mig-2g.20gb\"} 5\n",
           "gpuadmit_cluster_resource_queued{resource=\"nvidia.com/mig-2g.20gb\"} 1\n",
           "gpuadmit_cluster_resource_reserved{resource=\"nvidia.com/mig-2g.20gb\"} 2\n",
           "gpuadmit_cluster_resource_free{resource=\"nvidia.com/mig-2g.20gb\"} 4\n",
           "# TYPE gpuadmit_mig_stranded_slices gauge\n",
           "gpuadmit_mig_stranded_slices{profile=\"1g.10gb\"} 3\n",
           "gpuadmit_mig_stranded_slices{profile=\"2g.20gb\"} 0\n",
           "gpuadmit_inventory_last_update_timestamp_seconds 1700000000\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(text.find("node=\""), std::string::npos);  // no per-node series unless filled

  // A later snapshot replaces the block whole, per-node series included when given.
  resources.push_back({"gpu-\"a\"", "nvidia.com/mig-2g.20gb", 12, 5, 1, 2, 4});
  stranded.push_back({"gpu-\"a\"", "2g.20gb", 0});
  m.SetInventory(resources, stranded, 1700000060);
  text = m.Render();
  EXPECT_NE(text.find("gpuadmit_cluster_resource_free{node=\"gpu-\\\"a\\\"\",resource=\"nvidia.com/"
                      "mig-2g.20gb\"} 4\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("gpuadmit_mig_stranded_slices{node=\"gpu-\\\"a\\\"\",profile=\"2g.20gb\"} 0\n"),
      std::string::npos);
  EXPECT_EQ(text.find("1700000000"), std::string::npos);
  EXPECT_NE(text.find("gpuadmit_inventory_last_update_timestamp_seconds 1700000060\n"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuadmit
