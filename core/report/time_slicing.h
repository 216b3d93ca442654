// Time-slicing advice: how many replicas to make of each GPU (the NVIDIA device plugin's
// `sharing.timeSlicing.resources[].replicas`), from a table over the GPU's utilisation
// in the metrics window and its burstiness:
//
//   mean utilisation   burstiness   replicas
//   < 20%              > 70%        8
//   20-40%             > 50%        4
//   40-60%             any          2
//   > 60%              any          1 (no sharing)
//
// The table's bands are [0, 20), [20, 40), [40, 60] and (60, 100]: a boundary value belongs to
// the band it starts, and 60 to the 40-60 row (">60%" is strict); the burstiness bounds are
// strict too (exactly 70% is not "> 70%"). Where the table is silent (under 40% but not bursty
// enough for its row) the next row down applies, so the rows are read as a cascade: first
// "< 20% and > 70%" -> 8, then "< 40% and > 50%" -> 4, then "<= 60%" -> 2, else 1. A steady
// load gets fewer replicas than a bursty one of the same mean, never none.
//
// Burstiness is 1 - mean/max of the window's utilisation points, as a percentage: 0% for a
// steady load, and for a load that is either at its peak or idle, the share of the window it
// was idle (busy 20% of the time: 80% bursty). It needs two points or more; with one (a single
// DCGM reading) it is unknown and the two rows that need it do not apply. A window whose max is
// 0 (an idle GPU) is 0% bursty. docs/report.md says why this measure.
//
//   std::optional<double> b = BurstinessPercent(*gpu.utilization_percent);
//   int replicas = RecommendedReplicas(gpu.utilization_percent->mean, b);
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {

// 1 - mean/max of `utilization`, x 100; nullopt with fewer than 2 points; 0 when max <= 0.
std::optional<double> BurstinessPercent(const WindowStats& utilization);

struct ReplicasRule {
  int replicas = 1;
  std::string_view rule;  // the row that applied, e.g. "< 20% and > 70% bursty"
};

// The table, read as the file comment says. `burstiness_percent` nullopt: unknown.
ReplicasRule RecommendedReplicas(double mean_utilization_percent,
                                 std::optional<double> burstiness_percent);

struct TimeSlicingAdvice {
  std::string node;  // the metrics' host (a node name once renamed)
  int gpu = -1;      // device index on its node
  std::string uuid;
  std::string model;
  size_t points = 0;                               // utilisation points in the window
  std::optional<double> mean_utilization_percent;  // nullopt: the GPU reports no utilisation
  std::optional<double> max_utilization_percent;
  std::optional<double> burstiness_percent;
  // The node's nvidia.com/gpu.replicas (1 when absent or when the node is not known).
  int64_t current_replicas = 1;
  bool shared = false;                      // the node time-slices or runs MPS (GFD labels)
  std::optional<int> recommended_replicas;  // nullopt without utilisation data
  std::string_view rule;                    // "" without
};

// One entry per whole GPU in `metrics` (MIG instances are left out: a MIG slice is shared by
// partitioning, not time), in the metrics' order (node, then GPU index). `nodes` gives each
// GPU's current replicas and sharing strategy.
std::vector<TimeSlicingAdvice> AdviseTimeSlicing(std::span<const NodeFacts> nodes,
                                                 const ClusterGpuMetrics& metrics);

}  // namespace gpuadmit
