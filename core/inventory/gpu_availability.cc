#include "core/inventory/gpu_availability.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace gpuadmit {

std::string Describe(const DeviceFilter& filter) {
  std::string text;
  char buf[96];
  if (filter.min_free_mib) {
    std::snprintf(buf, sizeof buf, "free memory >= %.0f MiB", *filter.min_free_mib);
    text = buf;
  }
  if (filter.max_utilization_percent) {
    std::snprintf(buf, sizeof buf, "%sutilisation <= %g%%", text.empty() ? "" : ", ",
                  *filter.max_utilization_percent);
    text += buf;
  }
  return text;
}

bool PassesFilter(const GpuSample& device, const DeviceFilter& filter) {
  if (filter.min_free_mib && device.fb_free_mib && *device.fb_free_mib < *filter.min_free_mib) {
    return false;
  }
  return !(filter.max_utilization_percent && device.utilization_percent &&
           *device.utilization_percent > *filter.max_utilization_percent);
}

double AvailabilityScore(const GpuSample& device, const ScoreWeights& weights) {
  double free_ratio = 1.0 - device.MemoryUsedPercent().value_or(0) / 100.0;
  double utilization = std::clamp(device.utilization_percent.value_or(0), 0.0, 100.0);
  double idle_ratio = (100.0 - utilization) / 100.0;
  return weights.memory * free_ratio + weights.idle * idle_ratio;
}

DeviceAvailability BestDevices(const NodeGpuMetrics* node, int64_t allocatable,
                               std::string_view mig_profile, const DeviceFilter& filter,
                               const ScoreWeights& weights, int64_t count) {
  DeviceAvailability a;
  if (allocatable <= 0 || count <= 0) return a;
  std::vector<double> scores;
  int64_t reported = 0;
  if (node != nullptr) {
    for (const GpuMetrics& gpu : node->gpus) {
      const GpuSample& d = gpu.latest;
      bool counted = mig_profile.empty() ? !d.IsMigInstance() : d.mig_profile == mig_profile;
      if (!counted) continue;
      ++reported;
      if (PassesFilter(d, filter)) scores.push_back(AvailabilityScore(d, weights));
    }
  }
  // The allocatable devices the exporter reports nothing for pass, as free and idle.
  int64_t unreported = std::max<int64_t>(0, allocatable - reported);
  scores.insert(scores.end(), static_cast<size_t>(unreported), weights.memory + weights.idle);
  a.passing = std::min<int64_t>(static_cast<int64_t>(scores.size()), allocatable);
  int64_t best = std::min(count, a.passing);
  if (best == 0) return a;
  std::partial_sort(scores.begin(), scores.begin() + best, scores.end(), std::greater<>());
  double sum = 0;
  for (int64_t i = 0; i < best; ++i) sum += scores[static_cast<size_t>(i)];
  a.score = sum / static_cast<double>(best);
  return a;
}

}  // namespace gpuadmit
