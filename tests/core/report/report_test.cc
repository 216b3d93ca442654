#include "core/report/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/report/report_render.h"
#include "tests/core/report/report_test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using report_test::GpuNode;
using report_test::GpuPod;
using report_test::MetricsOf;

// gpu-node-01 holds three 2-GPU pods (6/8), gpu-node-02 one (2/8); gpu-node-02's GPU 0 is busy
// one point in four (0, 0, 0, 100: mean 25, 75% bursty). Repacking puts b1 on gpu-node-01
// (6 + 2 = 8) and frees gpu-node-02's 8 GPUs. gpuadmit fell back from 2g.20gb three times and
// ran out once.
ReportInput SeedCluster(bool with_metrics) {
  ReportInput in;
  in.nodes = {GpuNode("gpu-node-01", 8), GpuNode("gpu-node-02", 8)};
  in.pods = {GpuPod("ml/a1", "gpu-node-01", 2), GpuPod("ml/a2", "gpu-node-01", 2),
             GpuPod("ml/a3", "gpu-node-01", 2), GpuPod("ml/b1", "gpu-node-02", 2)};
  if (with_metrics) {
    in.metrics = MetricsOf({{{"gpu-node-02", 0}, {0, 0, 0, 100}}});
    in.mig_counters = MigPressureCounters{
        .fallbacks = {{"2g.20gb", "1g.10gb", 3}}, .exhausted_by_profile = {}, .exhausted_total = 1};
  }
  return in;
}

TEST(ReportText, SeedPhrasingWithoutMetricsOrCounters) {
  Report r = BuildReport(SeedCluster(false), {});
  EXPECT_EQ(ReportText(r),
            "Consolidation opportunities found: underutilizedNodes=1, potentialSavings=8 GPUs\n"
            "GPU nodes analysed: 2 (16 GPUs, 8 allocated); 4 GPU pods on 2 nodes, on 1 after "
            "repacking\n"
            "Underutilized: under 50% of a node's GPUs allocated, or under 30% GPU utilisation "
            "measured over the metrics window\n"
            "Recommendation: Node gpu-node-02 is underutilized (25.0% used, 2/8 GPUs allocated)\n"
            "Move: pod ml/b1 from gpu-node-02 to gpu-node-01 (2 GPUs)\n"
            "Freed: node gpu-node-02 holds no GPU pod after repacking\n"
            "MIG layout pressure: no gpuadmit counters given (--gpuadmit-metrics)\n"
            "Time-slicing: no GPU metrics given (--dcgm-file or --prometheus)\n");
}

TEST(ReportText, SaysSoWhenThereAreNoGpuPodsAndCountsInTheSingular) {
  ReportInput empty;
  empty.nodes = {GpuNode("gpu-node-01", 8)};
  std::string text = ReportText(BuildReport(empty, {}));
  EXPECT_EQ(text.substr(0, text.find('\n') + 1),
            "Consolidation opportunities found: none, no GPU pods on the 1 GPU node analysed "
            "(8 GPUs)\n");
  ReportInput one;
  one.nodes = {GpuNode("gpu-node-01", 8), GpuNode("gpu-node-02", 1)};
  one.pods = {GpuPod("ml/a", "gpu-node-02", 1)};
  text = ReportText(BuildReport(one, {}));
  EXPECT_NE(text.find("; 1 GPU pod on 1 node, on 1 after repacking\n"), std::string::npos) << text;
}

TEST(ReportText, EverySectionWithMetricsAndCounters) {
  Report r = BuildReport(SeedCluster(true), {});
  EXPECT_EQ(ReportText(r),
            "Consolidation opportunities found: underutilizedNodes=1, potentialSavings=8 GPUs\n"
            "GPU nodes analysed: 2 (16 GPUs, 8 allocated); 4 GPU pods on 2 nodes, on 1 after "
            "repacking\n"
            "Underutilized: under 50% of a node's GPUs allocated, or under 30% GPU utilisation "
            "measured over the metrics window\n"
            "Recommendation: Node gpu-node-02 is underutilized (25.0% used, 2/8 GPUs allocated, "
            "25.0% measured utilisation)\n"
            "Move: pod ml/b1 from gpu-node-02 to gpu-node-01 (2 GPUs)\n"
            "Freed: node gpu-node-02 holds no GPU pod after repacking\n"
            "MIG profile 2g.20gb ran out 3 times while a smaller profile was free (100.0% of "
            "fallbacks; given 1g.10gb 3); 0/0 free now: give the mig-parted layout more 2g.20gb "
            "instances\n"
            "MIG: 1 pods found neither their profile nor a smaller one free (more MIG capacity, "
            "not another layout)\n"
            "Time-slicing: gpu-node-02 GPU 0 (NVIDIA A100-SXM4-40GB): 25.0% mean utilisation "
            "over 4 points, 75.0% bursty -> 4 replicas (< 40% and > 50% bursty; now 1)\n");
}

TEST(ReportJson, StableCamelCaseFieldsWithTheComputedValues) {
  Report r = BuildReport(SeedCluster(true), {});
  json doc = json::parse(ReportJson(r));
  EXPECT_EQ(doc["thresholds"],
            json({{"underusedAllocationPercent", 50.0}, {"underusedUtilizationPercent", 30.0}}));
  const json& c = doc["consolidation"];
  EXPECT_EQ(c["gpuNodes"], 2);
  EXPECT_EQ(c["capacityGpus"], 16.0);
  EXPECT_EQ(c["allocatedGpus"], 8.0);
  EXPECT_EQ(c["underutilizedNodes"], 1);
  EXPECT_EQ(c["potentialSavingsGpus"], 8.0);
  EXPECT_EQ(c["nodesInUse"], 2);
  EXPECT_EQ(c["nodesInUseAfter"], 1);
  EXPECT_EQ(c["podsPacked"], 4);
  EXPECT_EQ(c["podsPinned"], 0);
  EXPECT_EQ(c["freedNodes"], json({"gpu-node-02"}));
  EXPECT_EQ(c["unplaceablePods"], json::array());
  EXPECT_EQ(c["moves"], json::parse(R"([{"pod": "ml/b1", "from": "gpu-node-02",
                                          "to": "gpu-node-01", "gpus": 2.0}])"));
  EXPECT_EQ(c["underused"], json::parse(R"([{"node": "gpu-node-02", "capacityGpus": 8.0,
      "allocatedGpus": 2.0, "allocatedPercent": 25.0, "utilizationPercent": 25.0,
      "byAllocation": true, "byUtilization": true}])"));
  EXPECT_EQ(doc["migPressure"], json::parse(R"({"exhaustedTotal": 1, "profiles": [
      {"profile": "2g.20gb", "fallbacks": 3, "sharePercent": 100.0,
       "given": [{"profile": "1g.10gb", "count": 3}], "exhausted": null,
       "allocatableNow": 0, "freeNow": 0}]})"));
  EXPECT_EQ(doc["timeSlicing"], json::parse(R"({"windowPoints": 4, "gpus": [
      {"node": "gpu-node-02", "gpu": 0, "uuid": "", "model": "NVIDIA A100-SXM4-40GB",
       "points": 4, "meanUtilizationPercent": 25.0, "maxUtilizationPercent": 100.0,
       "burstinessPercent": 75.0, "currentReplicas": 1, "shared": false,
       "recommendedReplicas": 4, "rule": "< 40% and > 50% bursty"}]})"));
}

TEST(ReportJson, SectionsWithoutInputAreNull) {
  json doc = json::parse(ReportJson(BuildReport(SeedCluster(false), {})));
  EXPECT_TRUE(doc["migPressure"].is_null());
  EXPECT_TRUE(doc["timeSlicing"].is_null());
}

TEST(BuildReport, ThresholdsComeFromTheOptions) {
  ReportOptions options{
      .consolidation = {.underused_allocation_percent = 20, .underused_utilization_percent = 30}};
  Report r = BuildReport(SeedCluster(false), options);
  EXPECT_TRUE(r.consolidation.underused.empty());               // 25% is not below 20%
  EXPECT_DOUBLE_EQ(r.consolidation.potential_savings_gpus, 8);  // the packing does not change
}

}  // namespace
}  // namespace gpuadmit
