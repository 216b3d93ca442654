// GPU availability per device, from its latest DCGM values: whether a device passes a filter on
// free framebuffer and utilisation, and its availability score
//
//   score = memory_weight x free / (used + free) + idle_weight x (100 - utilisation) / 100
//
// (0.6 and 0.4 by default). A node's answer for an ask of `count` devices is how many pass and
// the mean score of its best `count` passing ones:
//
//   DeviceAvailability a = BestDevices(metrics.FindNode("gpu-1"), 8, "", filter, {0.6, 0.4}, 2);
//   if (a.passing >= 2) ... a.score ...
//
// The devices counted are those IdleGpuCount counts: whole GPUs, or the MIG instances of one
// profile. A value the exporter does not report passes and scores as free (1), and so do the
// allocatable devices it reports nothing for, as in IdleGpuCount: without metrics every device
// passes and scores memory_weight + idle_weight.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/inventory/gpu_metrics.h"

namespace gpuadmit {

struct DeviceFilter {
  std::optional<double> min_free_mib;             // at least this much framebuffer free
  std::optional<double> max_utilization_percent;  // at most this utilisation
  bool Active() const { return min_free_mib.has_value() || max_utilization_percent.has_value(); }
};

// "free memory >= 8000 MiB, utilisation <= 50%"
std::string Describe(const DeviceFilter& filter);

struct ScoreWeights {
  double memory = 0.6;
  double idle = 0.4;
};

// Whether `device` passes `filter` by its latest values.
bool PassesFilter(const GpuSample& device, const DeviceFilter& filter);

// The device's availability score by its latest values.
double AvailabilityScore(const GpuSample& device, const ScoreWeights& weights);

struct DeviceAvailability {
  int64_t passing = 0;  // counted devices that pass the filter, within [0, allocatable]
  double score = 0;     // mean of the best min(count, passing) passing scores; 0 with none
};

DeviceAvailability BestDevices(const NodeGpuMetrics* node, int64_t allocatable,
                               std::string_view mig_profile, const DeviceFilter& filter,
                               const ScoreWeights& weights, int64_t count);

}  // namespace gpuadmit
