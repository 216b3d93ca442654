#include "core/inventory/gpu_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {

// Whole-value comparisons print every field on failure.
void PrintTo(const GpuSample& s, std::ostream* os) {
  auto opt = [](const std::optional<double>& v) { return v ? std::to_string(*v) : "-"; };
  *os << "{" << s.node << " gpu=" << s.gpu << " mig=" << s.mig_instance << "/" << s.mig_profile
      << " " << s.uuid << " " << s.model_name << " util=" << opt(s.utilization_percent)
      << " used=" << opt(s.fb_used_mib) << " free=" << opt(s.fb_free_mib)
      << " temp=" << opt(s.temperature_c) << " power=" << opt(s.power_w) << "}";
}

namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr char kA100[] = "NVIDIA A100-SXM4-40GB";

GpuReading ReadFixture(const std::string& name) {
  return GpuReadingFromExposition(testing::ReadSourceFile("tests/fixtures/dcgm/" + name));
}

TEST(GpuMetricsFixture, TeslaT4TwoGpusOneWorkloadReadsPerGpuUtilisationAndMemory) {
  GpuReading reading = ReadFixture("tesla-t4-x2-one-workload-pod-labels.prom");
  const std::string node = "nvidia-dcgm-exporter-s228n";
  EXPECT_EQ(reading, (GpuReading{.gpus = {
                                     {node, 0, -1, "", "GPU-7a2e92f2-be71-d37e-a744-541600ffc722",
                                      "Tesla T4", 0.0, 128, 14831, 55, 28.722},
                                     {node, 1, -1, "", "GPU-5f587dd4-6505-0873-c6db-8324dbfe5ba9",
                                      "Tesla T4", 0.0, 5, 14955, 52, 17.035},
                                 }}));
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  ASSERT_NE(metrics.FindNode(node), nullptr);
  EXPECT_EQ(IdleGpuCount(metrics.FindNode(node), 2), 2);  // 0 % busy, 128 of 14959 MiB used
  EXPECT_EQ(metrics.FindNode(node)->MeanUtilizationPercent(), 0.0);
}

TEST(GpuMetricsFixture, A100MigFourActiveWorkloadsReadsEachInstanceByProfile) {
  GpuReading reading = ReadFixture("a100-mig-4-active-workloads.ini");
  const std::string node = "nvidia-dcgm-exporter-tl46n";
  const std::string uuid = "GPU-473571f2-fb37-ef7e-50fe-9885b74a23cd";
  EXPECT_EQ(reading,
            (GpuReading{.gpus =
                            {
                                {node, 0, 5, "2g.10gb", uuid, kA100, 0.0, 13, 9843, 35, 112.252},
                                {node, 0, 7, "1g.5gb", uuid, kA100, 0.0, 6, 4857, 35, 112.252},
                                // GR_ENGINE_ACTIVE 0.408493 is a ratio: 40.8493 %.
                                {node, 0, 8, "1g.5gb", uuid, kA100, 0.408493 * 100.0, 4384, 480, 35,
                                 106.463},
                                {node, 0, 9, "1g.5gb", uuid, kA100, 0.0, 6, 4857, 35, 106.463},
                            },
                        .skipped_lines = 1,  // the title "4 Active Workloads"
                        .first_skipped_line = 1}));
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  const NodeGpuMetrics* n = metrics.FindNode(node);
  EXPECT_EQ(IdleGpuCount(n, 3, {}, "1g.5gb"), 2);  // instance 8: 40.8 % busy, 90 % memory
  EXPECT_EQ(IdleGpuCount(n, 1, {}, "2g.10gb"), 1);
  EXPECT_EQ(IdleGpuCount(n, 0), 0);  // no whole GPU is allocatable on a MIG node
}

TEST(GpuMetricsFixture, A100MigActiveTwoOneGFiveAndOneTwoGTen) {
  GpuReading reading = ReadFixture("a100-mig-active-2x1g.5gb-1x2g.10gb.ini");
  const std::string node = "nvidia-dcgm-exporter-q28k4";
  const std::string uuid = "GPU-7099682b-a20d-2bcc-74ab-b9060454d81e";
  EXPECT_EQ(
      reading,
      (GpuReading{
          .gpus =
              {
                  {node, 0, 5, "2g.10gb", uuid, kA100, 0.000036 * 100.0, 153, 9702, 37, 116.163},
                  {node, 0, 7, "1g.5gb", uuid, kA100, 0.000062 * 100.0, 98, 4766, 37, 116.043},
                  {node, 0, 9, "1g.5gb", uuid, kA100, 0.999917 * 100.0, 4384, 480, 37, 116.043},
              },
          .skipped_lines = 1,
          .first_skipped_line = 1}));
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  EXPECT_EQ(IdleGpuCount(metrics.FindNode(node), 2, {}, "1g.5gb"), 1);
  EXPECT_EQ(IdleGpuCount(metrics.FindNode(node), 1, {}, "2g.10gb"), 1);
}

TEST(GpuMetricsFixture, A100MigDisabledEmptySkipsTitleAndDashesAndMergesTheRepeatedDump) {
  GpuReading reading = ReadFixture("a100-mig-disabled-empty.ini");
  // The file holds the same dump twice, the two separated by rows of dashes.
  EXPECT_EQ(reading, (GpuReading{.gpus = {{"nvidia-dcgm-exporter-drqwq", 0, -1, "",
                                           "GPU-7099682b-a20d-2bcc-74ab-b9060454d81e", kA100, 0.0,
                                           0, 40384, 29, 45.999}},
                                 .skipped_lines = 3,  // lines 1 (title), 3 and 75 (dashes)
                                 .first_skipped_line = 1}));
}

TEST(GpuMetricsFixture, A100MigEnabledEmptyWholeGpuHasEngineRatioButNoFramebuffer) {
  GpuReading reading = ReadFixture("a100-mig-enabled-empty.ini");
  GpuSample gpu{"nvidia-dcgm-exporter-wwvv9",
                0,
                -1,
                "",
                "GPU-7099682b-a20d-2bcc-74ab-b9060454d81e",
                kA100,
                0.000033 * 100.0,
                std::nullopt,
                std::nullopt,
                32,
                75.96};
  EXPECT_EQ(reading, (GpuReading{.gpus = {gpu}, .skipped_lines = 1, .first_skipped_line = 1}));
  EXPECT_EQ(gpu.MemoryUsedPercent(), std::nullopt);
  EXPECT_TRUE(IsIdle(gpu));  // unreported memory does not count against it
}

TEST(GpuMetricsFixture, A100MigIdleOneGFiveAllocated) {
  GpuReading reading = ReadFixture("a100-mig-idle-1g.5gb-allocated.ini");
  EXPECT_EQ(reading, (GpuReading{.gpus = {{"nvidia-dcgm-exporter-m48cc", 0, 8, "1g.5gb",
                                           "GPU-7099682b-a20d-2bcc-74ab-b9060454d81e", kA100, 0.0,
                                           6, 4857, 32, 75.69}},
                                 .skipped_lines = 1,
                                 .first_skipped_line = 1}));
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  EXPECT_EQ(IdleGpuCount(metrics.FindNode("nvidia-dcgm-exporter-m48cc"), 1, {}, "1g.5gb"), 1);
}

TEST(GpuMetricsFixture, ExcerptWithoutHelpOrTypeLinesReadsWholeGpuAndItsMigInstance) {
  GpuReading reading = ReadFixture("a100-whole-gpu-and-mig-1g.5gb-excerpt.prom");
  const std::string uuid = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660";
  // No GPU_UTIL in this exporter's field list: the whole GPU's utilisation is its engine ratio.
  EXPECT_EQ(reading, (GpuReading{.gpus = {
                                     {"ub20-a100-k8s", 0, -1, "", uuid, "", 0.995630 * 100.0, 4845,
                                      35690, 61, 409.692},
                                     {"ub20-a100-k8s", 0, 13, "1g.5gb", uuid, "", 0.995687 * 100.0,
                                      std::nullopt, std::nullopt, std::nullopt, std::nullopt},
                                 }}));
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  EXPECT_EQ(IdleGpuCount(metrics.FindNode("ub20-a100-k8s"), 1), 0);  // 99.6 % busy
  EXPECT_EQ(IdleGpuCount(metrics.FindNode("ub20-a100-k8s"), 1, {}, "1g.5gb"), 0);
}

PromSample Sample(std::string name, std::vector<PromLabel> labels, double value) {
  return PromSample{std::move(name), std::move(labels), value, {}};
}

TEST(GpuReading, NewerLowercaseHostnameLabelNamesTheNodeAndOlderHostnameWins) {
  std::vector<PromSample> samples = {
      Sample("DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"hostname", "new-node"}}, 1),
      Sample("DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"hostname", "x"}, {"Hostname", "old"}}, 2),
  };
  GpuReading reading = GpuReadingFromSamples(samples);
  ASSERT_EQ(reading.gpus.size(), 2u);
  EXPECT_EQ(reading.gpus[0].node, "new-node");
  EXPECT_EQ(reading.gpus[1].node, "old");
}

TEST(GpuReading, SeriesWithoutNodeLabelOrGpuIndexAreDroppedAndCountedNotKeyedByInstance) {
  std::vector<PromSample> samples = {
      Sample("DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"instance", "10.0.0.7:9400"}}, 1),
      Sample("DCGM_FI_DEV_FB_USED", {{"Hostname", "n"}}, 1),
      Sample("DCGM_FI_DEV_FB_USED", {{"Hostname", "n"}, {"gpu", "zero"}}, 1),
      Sample("DCGM_FI_DEV_FB_USED", {{"Hostname", "n"}, {"gpu", "0"}, {"GPU_I_ID", "x"}}, 1),
      Sample("DCGM_FI_DEV_SM_CLOCK", {{"instance", "10.0.0.7:9400"}}, 1),  // not ours: ignored
  };
  GpuReading expected;
  expected.unattributed_series = 4;
  EXPECT_EQ(GpuReadingFromSamples(samples), expected);
}

TEST(GpuReading, ARelabelledNodeLabelCanBePreferred) {
  std::vector<PromSample> samples = {
      Sample("DCGM_FI_DEV_GPU_TEMP", {{"gpu", "0"}, {"Hostname", "pod"}, {"node", "n1"}}, 40)};
  GpuReading reading = GpuReadingFromSamples(samples, {.node_labels = {"node", "Hostname"}});
  ASSERT_EQ(reading.gpus.size(), 1u);
  EXPECT_EQ(reading.gpus[0].node, "n1");
}

TEST(GpuReading, WholeGpuPrefersGpuUtilAndMigInstancePrefersEngineRatio) {
  std::vector<PromSample> samples = {
      Sample("DCGM_FI_DEV_GPU_UTIL", {{"Hostname", "n"}, {"gpu", "0"}}, 12),
      Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"Hostname", "n"}, {"gpu", "0"}}, 0.5),
      // An exporter that writes GPU_UTIL on a MIG series writes the parent GPU's.
      Sample("DCGM_FI_DEV_GPU_UTIL", {{"Hostname", "n"}, {"gpu", "0"}, {"GPU_I_ID", "3"}}, 12),
      Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {{"Hostname", "n"}, {"gpu", "0"}, {"GPU_I_ID", "3"}},
             0.25),
      Sample("DCGM_FI_DEV_GPU_UTIL", {{"Hostname", "n"}, {"gpu", "1"}}, std::nan("")),
  };
  GpuReading reading = GpuReadingFromSamples(samples);
  ASSERT_EQ(reading.gpus.size(), 3u);
  EXPECT_EQ(reading.gpus[0].utilization_percent, 12.0);
  EXPECT_EQ(reading.gpus[1].utilization_percent, 25.0);
  EXPECT_EQ(reading.gpus[2].utilization_percent, std::nullopt);  // NaN is not a reading
}

GpuReading OneGpu(std::string node, std::optional<double> util, std::optional<double> used,
                  int gpu = 0) {
  GpuSample sample;
  sample.node = std::move(node);
  sample.gpu = gpu;
  sample.utilization_percent = util;
  sample.fb_used_mib = used;
  sample.fb_free_mib = used ? std::optional<double>(1000 - *used) : std::nullopt;
  return GpuReading{.gpus = {sample}};
}

TEST(GpuMetricsHistory, WindowGivesMinMaxMeanOverTheLastFiveMinutes) {
  GpuMetricsHistory history;
  MetricsTime t0{};
  history.Add(OneGpu("n", 90, 900), t0);  // falls out of the window below
  history.Add(OneGpu("n", 10, 100), t0 + minutes(2));
  history.Add(OneGpu("n", 30, 200), t0 + minutes(4));
  history.Add(OneGpu("n", 20, std::nullopt), t0 + minutes(6));
  ClusterGpuMetrics metrics = history.Publish();
  ASSERT_EQ(metrics.nodes().size(), 1u);
  const GpuMetrics& gpu = metrics.nodes()[0].gpus.at(0);
  EXPECT_EQ(gpu.latest, OneGpu("n", 20, std::nullopt).gpus[0]);
  EXPECT_EQ(gpu.latest_at, t0 + minutes(6));
  EXPECT_EQ(gpu.utilization_percent, (WindowStats{.min = 10, .max = 30, .mean = 20, .count = 3}));
  EXPECT_EQ(gpu.fb_used_mib, (WindowStats{.min = 100, .max = 200, .mean = 150, .count = 2}));
  EXPECT_EQ(metrics.observed_at(), t0 + minutes(6));
}

TEST(GpuMetricsHistory, DeviceMissingFromAReadingKeepsItsValuesUntilItAgesOutOfTheWindow) {
  GpuMetricsHistory history({.span = minutes(5), .max_points = 64});
  MetricsTime t0{};
  history.Add(OneGpu("gone", 50, 500), t0);
  history.Add(OneGpu("stays", 1, 1), t0 + minutes(4));
  ASSERT_NE(history.Publish().FindNode("gone"), nullptr);
  history.Add(OneGpu("stays", 1, 1), t0 + minutes(5) + seconds(1));
  EXPECT_EQ(history.Publish().FindNode("gone"), nullptr);
  EXPECT_EQ(history.device_count(), 1u);
}

TEST(GpuMetricsHistory, KeepsAtMostMaxPointsPerDevice) {
  GpuMetricsHistory history({.span = minutes(5), .max_points = 2});
  MetricsTime t0{};
  for (int i = 0; i < 5; ++i) history.Add(OneGpu("n", i, i), t0 + seconds(i));
  ClusterGpuMetrics published = history.Publish();
  const GpuMetrics& gpu = published.nodes()[0].gpus[0];
  EXPECT_EQ(gpu.utilization_percent, (WindowStats{.min = 3, .max = 4, .mean = 3.5, .count = 2}));
}

TEST(GpuMetricsHistory, PublishesTemperatureAndPowerStatsAndTheWindowsPoints) {
  GpuMetricsHistory history({.span = minutes(5), .max_points = 3});
  MetricsTime t0{};
  for (int i = 0; i < 4; ++i) {
    GpuReading r = OneGpu("n", 10 * i, std::nullopt);
    r.gpus[0].temperature_c = 40 + i;
    r.gpus[0].power_w = 100 + 10 * i;
    history.Add(r, t0 + seconds(15 * i));
  }
  ClusterGpuMetrics published = history.Publish();
  const GpuMetrics& gpu = published.nodes()[0].gpus[0];
  // The cap of three points drops the first reading.
  EXPECT_EQ(gpu.temperature_c, (WindowStats{.min = 41, .max = 43, .mean = 42, .count = 3}));
  EXPECT_EQ(gpu.power_w, (WindowStats{.min = 110, .max = 130, .mean = 120, .count = 3}));
  ASSERT_NE(gpu.window, nullptr);
  ASSERT_EQ(gpu.window->size(), 3u);
  EXPECT_EQ(gpu.window->front().at, t0 + seconds(15));
  EXPECT_EQ(gpu.window->back().utilization_percent, 30.0f);
  EXPECT_FALSE(gpu.window->back().fb_used_mib.has_value());
  // A second publication shares the window rather than copying it.
  EXPECT_EQ(history.Publish().nodes()[0].gpus[0].window.get(), gpu.window.get());
  // The next reading replaces the window; the one published before is unchanged.
  history.Add(OneGpu("n", 99, 1), t0 + seconds(60));
  EXPECT_EQ(gpu.window->back().utilization_percent, 30.0f);
  EXPECT_EQ(history.Publish().nodes()[0].gpus[0].window->back().utilization_percent, 99.0f);
}

TEST(IdleGpuCount, NodeWithoutMetricsCountsAllAllocatableGpusIdle) {
  EXPECT_EQ(IdleGpuCount(nullptr, 8), 8);
  EXPECT_EQ(IdleGpuCount(nullptr, 0), 0);
}

TEST(IdleGpuCount, BusyMeansUtilisationOrMemoryAtOrAboveThresholdAndUnreportedGpusAreIdle) {
  GpuReading reading = OneGpu("n", 29, 499);               // idle: below both
  reading.gpus.push_back(OneGpu("n", 30, 0, 1).gpus[0]);   // busy: 30 % utilisation
  reading.gpus.push_back(OneGpu("n", 0, 500, 2).gpus[0]);  // busy: 50 % memory
  ClusterGpuMetrics metrics = ClusterGpuMetrics::FromReading(reading, {});
  const NodeGpuMetrics* node = metrics.FindNode("n");
  EXPECT_EQ(IdleGpuCount(node, 3), 1);
  EXPECT_EQ(IdleGpuCount(node, 8), 6);  // five GPUs the exporter does not report
  EXPECT_EQ(IdleGpuCount(node, 1), 0);  // never below zero
  IdleThresholds lenient{.max_utilization_percent = 40, .max_memory_used_percent = 60};
  EXPECT_EQ(IdleGpuCount(node, 3, lenient), 3);
  EXPECT_EQ(node->MeanUtilizationPercent(), 59.0 / 3);
}

TEST(RenameNodes, MapsExporterPodNamesToNodeNamesAndMergesHosts) {
  GpuReading reading = OneGpu("exporter-b", 1, 1, 1);
  reading.gpus.push_back(OneGpu("exporter-a", 2, 2, 0).gpus[0]);
  reading.gpus.push_back(OneGpu("node-z", 3, 3, 0).gpus[0]);
  ClusterGpuMetrics renamed = RenameNodes(ClusterGpuMetrics::FromReading(reading, {}),
                                          {{"exporter-a", "node-1"}, {"exporter-b", "node-1"}});
  ASSERT_EQ(renamed.nodes().size(), 2u);
  const NodeGpuMetrics* node = renamed.FindNode("node-1");
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->gpus.size(), 2u);
  EXPECT_EQ(node->gpus[0].latest.gpu, 0);
  EXPECT_EQ(node->gpus[0].latest.node, "node-1");
  EXPECT_EQ(node->gpus[1].latest.gpu, 1);
  EXPECT_NE(renamed.FindNode("node-z"), nullptr);
  EXPECT_EQ(renamed.FindNode("exporter-a"), nullptr);
}

}  // namespace
}  // namespace gpuadmit
