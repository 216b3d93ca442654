// GPU metrics: what NVIDIA's DCGM exporter says about each GPU and MIG instance, per node, with
// a short history so that placement can weigh min/max/mean over the last minutes and
// count idle GPUs.
//
//   GpuReading reading = GpuReadingFromExposition(text);  // or FromSamples(a query's answer)
//   GpuMetricsHistory history;                       // a 5 min window
//   history.Add(reading, now);                       // once per poll; the caller reads the clock
//   ClusterGpuMetrics metrics = history.Publish();
//   int64_t idle = IdleGpuCount(metrics.FindNode("gpu-node-1"), /*allocatable=*/8);
//
// Which label names the node: dcgm-exporter writes `Hostname` (older releases) or `hostname`
// (newer); both are read, in that order (GpuReadOptions::node_labels). Its value is what the
// exporter was told: the Kubernetes node name when the exporter runs with NODE_NAME set (GPU
// Operator), otherwise the exporter pod's own hostname (as in the recorded fixtures, e.g.
// "nvidia-dcgm-exporter-s228n"); RenameNodes maps the latter to node names. A series with no
// host label is dropped and counted, not keyed by `instance`: that label is the scrape address
// (pod IP:port), names no Node, and would turn into phantom nodes that hide the problem.
//
// Thread safety: GpuSample, NodeGpuMetrics and ClusterGpuMetrics are immutable values once
// built, safe to share between threads. GpuMetricsHistory is a plain mutable value for one
// thread (the poller's).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/inventory/prometheus_samples.h"

namespace gpuadmit {

using MetricsTime = std::chrono::steady_clock::time_point;

// The DCGM fields gpuadmit reads; every other metric in an exporter's text is ignored.
inline constexpr std::string_view kDcgmGpuUtil = "DCGM_FI_DEV_GPU_UTIL";                  // percent
inline constexpr std::string_view kDcgmGrEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";  // 0..1
inline constexpr std::string_view kDcgmFbUsed = "DCGM_FI_DEV_FB_USED";                    // MiB
inline constexpr std::string_view kDcgmFbFree = "DCGM_FI_DEV_FB_FREE";                    // MiB
inline constexpr std::string_view kDcgmGpuTemp = "DCGM_FI_DEV_GPU_TEMP";                  // Celsius
inline constexpr std::string_view kDcgmPowerUsage = "DCGM_FI_DEV_POWER_USAGE";            // W
inline constexpr std::string_view kDcgmMetricNames[] = {
    kDcgmGpuUtil, kDcgmGrEngineActive, kDcgmFbUsed, kDcgmFbFree, kDcgmGpuTemp, kDcgmPowerUsage};

// One device's latest values: a whole GPU, or one MIG instance of it.
struct GpuSample {
  std::string node;         // the host label's value (see the file comment)
  int gpu = -1;             // `gpu`: the device index on its node
  int mig_instance = -1;    // `GPU_I_ID`; -1 for a whole GPU
  std::string mig_profile;  // `GPU_I_PROFILE`, e.g. "1g.5gb"; empty for a whole GPU
  std::string uuid;         // `UUID` (a MIG instance carries its parent GPU's)
  std::string model_name;   // `modelName`, e.g. "Tesla T4"
  // Whole GPUs: DCGM_FI_DEV_GPU_UTIL. MIG instances: DCGM_FI_PROF_GR_ENGINE_ACTIVE x 100, since
  // DCGM has no per-instance GPU_UTIL; each falls back to the other when it alone is exported.
  std::optional<double> utilization_percent;
  std::optional<double> fb_used_mib;
  std::optional<double> fb_free_mib;
  std::optional<double> temperature_c;
  std::optional<double> power_w;

  bool IsMigInstance() const { return mig_instance >= 0; }
  // fb_used / (fb_used + fb_free) x 100, when both are known and the sum is positive.
  std::optional<double> MemoryUsedPercent() const;

  bool operator==(const GpuSample&) const = default;
};

struct GpuReadOptions {
  // Labels tried in order; the first one present names the node. Put a relabelled node-name
  // label (e.g. "node") first when the Prometheus scrape config adds one.
  std::vector<std::string> node_labels = {"Hostname", "hostname"};
};

struct GpuReading {
  std::vector<GpuSample> gpus;     // one per device, sorted by (node, gpu, mig_instance)
  size_t unattributed_series = 0;  // DCGM series with no host label or no integer `gpu`: dropped
  size_t skipped_lines = 0;        // exposition text only: lines that were not samples
  size_t first_skipped_line = 0;   // 1-based; 0 when none

  bool operator==(const GpuReading&) const = default;
};

// Folds DCGM samples into one GpuSample per device. Samples of other metrics are ignored. A
// device reported twice (two scrape jobs, or one series per pod sharing a GPU) keeps the last
// value read. NaN values count as not reported.
GpuReading GpuReadingFromSamples(std::span<const PromSample> samples,
                                 const GpuReadOptions& options = {});

// The same over exposition text (dcgm-exporter's /metrics, a `--dcgm-file`), carrying the
// parser's count of skipped lines.
GpuReading GpuReadingFromExposition(std::string_view text, const GpuReadOptions& options = {});

struct WindowStats {
  double min = 0;
  double max = 0;
  double mean = 0;
  size_t count = 0;  // points the three were computed over

  bool operator==(const WindowStats&) const = default;
};

// One reading of a device in the window: what the status page's charts draw.
struct WindowPoint {
  MetricsTime at;
  std::optional<float> utilization_percent;
  std::optional<float> fb_used_mib;
  std::optional<float> temperature_c;
  std::optional<float> power_w;

  bool operator==(const WindowPoint&) const = default;
};
using WindowPoints = std::shared_ptr<const std::vector<WindowPoint>>;

struct GpuMetrics {
  GpuSample latest;
  MetricsTime latest_at;
  std::optional<WindowStats> utilization_percent;  // over the window; nullopt without data
  std::optional<WindowStats> fb_used_mib;
  std::optional<WindowStats> temperature_c;
  std::optional<WindowStats> power_w;
  // The points the window holds, oldest first; shared with the history that published them
  // (never null once published).
  WindowPoints window;

  // Equal values and equal window points (not the same pointer).
  bool operator==(const GpuMetrics& other) const;
};

struct NodeGpuMetrics {
  std::string node;
  std::vector<GpuMetrics> gpus;  // sorted by (gpu, mig_instance): a GPU before its instances

  // Mean of the latest utilisation over the devices that report one (the node's average).
  std::optional<double> MeanUtilizationPercent() const;
  bool operator==(const NodeGpuMetrics&) const = default;
};

class ClusterGpuMetrics {
 public:
  ClusterGpuMetrics() = default;
  // `nodes` must be sorted by name with unique names (GpuMetricsHistory::Publish builds it so).
  ClusterGpuMetrics(std::vector<NodeGpuMetrics> nodes, MetricsTime observed_at,
                    size_t unattributed_series);

  // A one-reading history: every device's latest value, windows of one point.
  static ClusterGpuMetrics FromReading(const GpuReading& reading, MetricsTime at);

  const std::vector<NodeGpuMetrics>& nodes() const { return nodes_; }
  // The node's metrics, or nullptr when the exporter reported nothing for it.
  const NodeGpuMetrics* FindNode(std::string_view node) const;
  MetricsTime observed_at() const { return observed_at_; }  // the newest reading's time
  size_t unattributed_series() const { return unattributed_series_; }

 private:
  std::vector<NodeGpuMetrics> nodes_;
  MetricsTime observed_at_{};
  size_t unattributed_series_ = 0;
};

// Renames hosts to node names (e.g. dcgm-exporter pod name -> the node the pod runs on, from the
// pod list); hosts not in `host_to_node` keep their name. Hosts renamed to one node are merged.
ClusterGpuMetrics RenameNodes(const ClusterGpuMetrics& metrics,
                              const std::map<std::string, std::string, std::less<>>& host_to_node);

struct MetricsWindowOptions {
  std::chrono::milliseconds span = std::chrono::minutes(5);  // the window placement weighs
  // Points kept per device: 5 min at the default 15 s poll is 20; the cap bounds memory when
  // someone polls every second.
  size_t max_points = 64;
};

class GpuMetricsHistory {
 public:
  explicit GpuMetricsHistory(MetricsWindowOptions options = {}) : options_(options) {}

  // Records one reading taken at `at` (times do not go backwards; an older `at` is treated as
  // `at` = the newest seen). Then forgets points older than the window, and devices whose
  // newest point is: a device missing from a few readings keeps its last values meanwhile.
  void Add(const GpuReading& reading, MetricsTime at);

  // Every device's newest values and min/max/mean of utilisation and memory used over the
  // points in the window.
  ClusterGpuMetrics Publish() const;

  size_t device_count() const { return series_.size(); }

 private:
  struct Series {
    GpuSample latest;
    MetricsTime latest_at;
    // Oldest first. Replaced, never changed, once published: Publish shares it, so a window is
    // held once however many ClusterGpuMetrics point at it.
    WindowPoints points;
  };
  using DeviceKey = std::tuple<std::string, int, int>;  // node, gpu, mig_instance

  MetricsWindowOptions options_;
  std::map<DeviceKey, Series> series_;
  MetricsTime newest_{};
  size_t unattributed_series_ = 0;
};

struct IdleThresholds {
  double max_utilization_percent = 30;  // idle: below 30 % utilisation
  double max_memory_used_percent = 50;  // ... and below 50 % of framebuffer used
};

// Whether a device is idle by its latest values. A value the exporter does not report does not
// count against it (a MIG-enabled GPU with no instances reports no framebuffer).
bool IsIdle(const GpuSample& gpu, const IdleThresholds& thresholds = {});

// How many of a node's `allocatable` devices are idle: whole GPUs when `mig_profile` is empty,
// else the MIG instances of that profile ("1g.5gb"). A node with no metrics (nullptr)
// counts all its allocatable devices as idle, and so devices the exporter does not report count
// as idle too; the answer is allocatable minus the reported busy ones, within [0, allocatable].
int64_t IdleGpuCount(const NodeGpuMetrics* node, int64_t allocatable,
                     const IdleThresholds& thresholds = {}, std::string_view mig_profile = {});

}  // namespace gpuadmit
