#include "core/inventory/gpu_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

namespace gpuadmit {
namespace {

enum class DcgmField { kGpuUtil, kGrEngineActive, kFbUsed, kFbFree, kGpuTemp, kPowerUsage };

std::optional<DcgmField> FieldOf(std::string_view metric) {
  if (metric == kDcgmGpuUtil) return DcgmField::kGpuUtil;
  if (metric == kDcgmGrEngineActive) return DcgmField::kGrEngineActive;
  if (metric == kDcgmFbUsed) return DcgmField::kFbUsed;
  if (metric == kDcgmFbFree) return DcgmField::kFbFree;
  if (metric == kDcgmGpuTemp) return DcgmField::kGpuTemp;
  if (metric == kDcgmPowerUsage) return DcgmField::kPowerUsage;
  return std::nullopt;
}

std::optional<int> ParseIndex(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// A device being assembled from its series: both utilisation sources are kept until the end,
// when the device's kind decides which one wins.
struct PartialDevice {
  GpuSample sample;
  std::optional<double> gpu_util_percent;
  std::optional<double> gr_engine_active_ratio;
};

void AssignIfPresent(std::string& field, std::string_view value) {
  if (!value.empty()) field.assign(value);
}

template <typename Member>
std::optional<WindowStats> StatsOf(const std::vector<WindowPoint>& points, Member member) {
  WindowStats stats;
  double sum = 0;
  for (const WindowPoint& point : points) {
    const std::optional<float>& reported = point.*member;
    if (!reported) continue;
    double value = *reported;
    stats.min = stats.count == 0 ? value : std::min(stats.min, value);
    stats.max = stats.count == 0 ? value : std::max(stats.max, value);
    sum += value;
    ++stats.count;
  }
  if (stats.count == 0) return std::nullopt;
  stats.mean = sum / static_cast<double>(stats.count);
  return stats;
}

bool DeviceOrder(const GpuMetrics& a, const GpuMetrics& b) {
  return std::tie(a.latest.gpu, a.latest.mig_instance) <
         std::tie(b.latest.gpu, b.latest.mig_instance);
}

}  // namespace

std::optional<double> GpuSample::MemoryUsedPercent() const {
  if (!fb_used_mib || !fb_free_mib) return std::nullopt;
  double total = *fb_used_mib + *fb_free_mib;
  if (total <= 0) return std::nullopt;
  return *fb_used_mib / total * 100.0;
}

GpuReading GpuReadingFromSamples(std::span<const PromSample> samples,
                                 const GpuReadOptions& options) {
  GpuReading reading;
  std::map<std::tuple<std::string, int, int>, PartialDevice> devices;
  for (const PromSample& sample : samples) {
    std::optional<DcgmField> field = FieldOf(sample.name);
    if (!field) continue;
    std::string_view node;
    for (const std::string& label : options.node_labels) {
      node = sample.Label(label);
      if (!node.empty()) break;
    }
    std::optional<int> gpu = ParseIndex(sample.Label("gpu"));
    std::string_view instance_label = sample.Label("GPU_I_ID");
    std::optional<int> mig_instance =
        instance_label.empty() ? std::optional<int>(-1) : ParseIndex(instance_label);
    if (node.empty() || !gpu || !mig_instance) {
      ++reading.unattributed_series;
      continue;
    }
    PartialDevice& device = devices[{std::string(node), *gpu, *mig_instance}];
    device.sample.node.assign(node);
    device.sample.gpu = *gpu;
    device.sample.mig_instance = *mig_instance;
    AssignIfPresent(device.sample.mig_profile, sample.Label("GPU_I_PROFILE"));
    AssignIfPresent(device.sample.uuid, sample.Label("UUID"));
    AssignIfPresent(device.sample.model_name, sample.Label("modelName"));
    if (std::isnan(sample.value)) continue;
    switch (*field) {
      case DcgmField::kGpuUtil:
        device.gpu_util_percent = sample.value;
        break;
      case DcgmField::kGrEngineActive:
        device.gr_engine_active_ratio = sample.value;
        break;
      case DcgmField::kFbUsed:
        device.sample.fb_used_mib = sample.value;
        break;
      case DcgmField::kFbFree:
        device.sample.fb_free_mib = sample.value;
        break;
      case DcgmField::kGpuTemp:
        device.sample.temperature_c = sample.value;
        break;
      case DcgmField::kPowerUsage:
        device.sample.power_w = sample.value;
        break;
    }
  }
  reading.gpus.reserve(devices.size());
  for (auto& [key, device] : devices) {
    std::optional<double> engine_percent;
    if (device.gr_engine_active_ratio) engine_percent = *device.gr_engine_active_ratio * 100.0;
    // On a MIG series GPU_UTIL, where an exporter writes it, is the parent GPU's, not the
    // instance's; the graphics-engine ratio is the instance's own.
    device.sample.utilization_percent =
        device.sample.IsMigInstance()
            ? (engine_percent ? engine_percent : device.gpu_util_percent)
            : (device.gpu_util_percent ? device.gpu_util_percent : engine_percent);
    reading.gpus.push_back(std::move(device.sample));
  }
  return reading;
}

GpuReading GpuReadingFromExposition(std::string_view text, const GpuReadOptions& options) {
  ExpositionSamples parsed = ParseExposition(text);
  GpuReading reading = GpuReadingFromSamples(parsed.samples, options);
  reading.skipped_lines = parsed.skipped_lines;
  reading.first_skipped_line = parsed.first_skipped_line;
  return reading;
}

std::optional<double> NodeGpuMetrics::MeanUtilizationPercent() const {
  double sum = 0;
  size_t count = 0;
  for (const GpuMetrics& gpu : gpus) {
    if (!gpu.latest.utilization_percent) continue;
    sum += *gpu.latest.utilization_percent;
    ++count;
  }
  if (count == 0) return std::nullopt;
  return sum / static_cast<double>(count);
}

ClusterGpuMetrics::ClusterGpuMetrics(std::vector<NodeGpuMetrics> nodes, MetricsTime observed_at,
                                     size_t unattributed_series)
    : nodes_(std::move(nodes)),
      observed_at_(observed_at),
      unattributed_series_(unattributed_series) {}

ClusterGpuMetrics ClusterGpuMetrics::FromReading(const GpuReading& reading, MetricsTime at) {
  GpuMetricsHistory history;
  history.Add(reading, at);
  return history.Publish();
}

const NodeGpuMetrics* ClusterGpuMetrics::FindNode(std::string_view node) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node,
                             [](const NodeGpuMetrics& n, std::string_view name) {
                               return std::string_view(n.node) < name;
                             });
  return it != nodes_.end() && it->node == node ? &*it : nullptr;
}

ClusterGpuMetrics RenameNodes(const ClusterGpuMetrics& metrics,
                              const std::map<std::string, std::string, std::less<>>& host_to_node) {
  std::map<std::string, NodeGpuMetrics, std::less<>> renamed;
  for (const NodeGpuMetrics& node : metrics.nodes()) {
    auto alias = host_to_node.find(node.node);
    const std::string& name = alias == host_to_node.end() ? node.node : alias->second;
    NodeGpuMetrics& target = renamed[name];
    target.node = name;
    for (GpuMetrics gpu : node.gpus) {
      gpu.latest.node = name;
      target.gpus.push_back(std::move(gpu));
    }
  }
  std::vector<NodeGpuMetrics> nodes;
  nodes.reserve(renamed.size());
  for (auto& [name, node] : renamed) {
    std::stable_sort(node.gpus.begin(), node.gpus.end(), DeviceOrder);
    nodes.push_back(std::move(node));
  }
  return ClusterGpuMetrics(std::move(nodes), metrics.observed_at(), metrics.unattributed_series());
}

bool GpuMetrics::operator==(const GpuMetrics& other) const {
  auto points = [](const WindowPoints& p) { return p ? *p : std::vector<WindowPoint>{}; };
  return latest == other.latest && latest_at == other.latest_at &&
         utilization_percent == other.utilization_percent && fb_used_mib == other.fb_used_mib &&
         temperature_c == other.temperature_c && power_w == other.power_w &&
         points(window) == points(other.window);
}

void GpuMetricsHistory::Add(const GpuReading& reading, MetricsTime at) {
  at = std::max(at, newest_);
  newest_ = at;
  unattributed_series_ = reading.unattributed_series;
  const MetricsTime oldest_kept = at - options_.span;
  const size_t max_points = std::max<size_t>(options_.max_points, 1);
  // The points of `old` still in the window, keeping room for `keep_room` more under the cap.
  auto kept = [&](const WindowPoints& old, size_t keep_room) {
    std::vector<WindowPoint> points;
    if (old == nullptr) return points;
    auto first = std::find_if(old->begin(), old->end(),
                              [&](const WindowPoint& p) { return p.at >= oldest_kept; });
    size_t left = static_cast<size_t>(old->end() - first);
    if (left + keep_room > max_points)
      first += static_cast<ptrdiff_t>(left + keep_room - max_points);
    points.reserve(static_cast<size_t>(old->end() - first) + keep_room);
    points.assign(first, old->end());
    return points;
  };
  auto as_float = [](const std::optional<double>& v) -> std::optional<float> {
    if (!v) return std::nullopt;
    return static_cast<float>(*v);
  };
  for (const GpuSample& gpu : reading.gpus) {
    Series& series = series_[{gpu.node, gpu.gpu, gpu.mig_instance}];
    series.latest = gpu;
    series.latest_at = at;
    std::vector<WindowPoint> points = kept(series.points, 1);
    points.push_back({at, as_float(gpu.utilization_percent), as_float(gpu.fb_used_mib),
                      as_float(gpu.temperature_c), as_float(gpu.power_w)});
    series.points = std::make_shared<const std::vector<WindowPoint>>(std::move(points));
  }
  for (auto it = series_.begin(); it != series_.end();) {
    const WindowPoints& points = it->second.points;
    if (points->front().at < oldest_kept) {  // only devices this reading did not report
      std::vector<WindowPoint> left = kept(points, 0);
      if (left.empty()) {
        it = series_.erase(it);
        continue;
      }
      it->second.points = std::make_shared<const std::vector<WindowPoint>>(std::move(left));
    }
    ++it;
  }
}

ClusterGpuMetrics GpuMetricsHistory::Publish() const {
  std::vector<NodeGpuMetrics> nodes;
  for (const auto& [key, series] : series_) {
    if (nodes.empty() || nodes.back().node != series.latest.node) {
      nodes.push_back(NodeGpuMetrics{series.latest.node, {}});
    }
    nodes.back().gpus.push_back(GpuMetrics{
        .latest = series.latest,
        .latest_at = series.latest_at,
        .utilization_percent = StatsOf(*series.points, &WindowPoint::utilization_percent),
        .fb_used_mib = StatsOf(*series.points, &WindowPoint::fb_used_mib),
        .temperature_c = StatsOf(*series.points, &WindowPoint::temperature_c),
        .power_w = StatsOf(*series.points, &WindowPoint::power_w),
        .window = series.points,
    });
  }
  return ClusterGpuMetrics(std::move(nodes), newest_, unattributed_series_);
}

bool IsIdle(const GpuSample& gpu, const IdleThresholds& thresholds) {
  if (gpu.utilization_percent && *gpu.utilization_percent >= thresholds.max_utilization_percent) {
    return false;
  }
  std::optional<double> memory = gpu.MemoryUsedPercent();
  return !(memory && *memory >= thresholds.max_memory_used_percent);
}

int64_t IdleGpuCount(const NodeGpuMetrics* node, int64_t allocatable,
                     const IdleThresholds& thresholds, std::string_view mig_profile) {
  if (allocatable <= 0) return 0;
  if (node == nullptr) return allocatable;
  int64_t busy = 0;
  for (const GpuMetrics& gpu : node->gpus) {
    bool counted =
        mig_profile.empty() ? !gpu.latest.IsMigInstance() : gpu.latest.mig_profile == mig_profile;
    if (counted && !IsIdle(gpu.latest, thresholds)) ++busy;
  }
  return std::clamp<int64_t>(allocatable - busy, 0, allocatable);
}

}  // namespace gpuadmit
