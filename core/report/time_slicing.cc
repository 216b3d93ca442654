#include "core/report/time_slicing.h"

#include <map>

#include "core/kube/gpu_equivalents.h"

namespace gpuadmit {
namespace {

// The table's bands, in percent of utilisation and of burstiness.
constexpr double kLowUtilization = 20;   // "< 20%"
constexpr double kMidUtilization = 40;   // "20-40%"
constexpr double kHighUtilization = 60;  // "40-60%"; above it "> 60%"
constexpr double kVeryBursty = 70;       // "> 70%"
constexpr double kBursty = 50;           // "> 50%"

}  // namespace

std::optional<double> BurstinessPercent(const WindowStats& utilization) {
  if (utilization.count < 2) return std::nullopt;
  if (utilization.max <= 0) return 0.0;
  return (1 - utilization.mean / utilization.max) * 100;
}

ReplicasRule RecommendedReplicas(double mean_utilization_percent,
                                 std::optional<double> burstiness_percent) {
  double u = mean_utilization_percent;
  if (burstiness_percent && u<kLowUtilization&& * burstiness_percent> kVeryBursty) {
    return {8, "< 20% and > 70% bursty"};
  }
  if (burstiness_percent && u<kMidUtilization&& * burstiness_percent> kBursty) {
    return {4, "< 40% and > 50% bursty"};
  }
  if (u <= kHighUtilization) return {2, "<= 60%"};
  return {1, "> 60%"};
}

std::vector<TimeSlicingAdvice> AdviseTimeSlicing(std::span<const NodeFacts> nodes,
                                                 const ClusterGpuMetrics& metrics) {
  std::map<std::string_view, const NodeFacts*, std::less<>> by_name;
  for (const NodeFacts& n : nodes) by_name.emplace(n.name, &n);
  std::vector<TimeSlicingAdvice> advice;
  for (const NodeGpuMetrics& node : metrics.nodes()) {
    auto facts = by_name.find(node.node);
    for (const GpuMetrics& gpu : node.gpus) {
      if (gpu.latest.IsMigInstance()) continue;
      TimeSlicingAdvice a;
      a.node = node.node;
      a.gpu = gpu.latest.gpu;
      a.uuid = gpu.latest.uuid;
      a.model = gpu.latest.model_name;
      if (facts != by_name.end()) {
        a.current_replicas = ReplicasPerGpu(*facts->second);
        const std::string& strategy = facts->second->gpu.sharing_strategy;
        a.shared = strategy == "time-slicing" || strategy == "mps" || a.current_replicas > 1;
      }
      if (const std::optional<WindowStats>& u = gpu.utilization_percent; u && u->count > 0) {
        a.points = u->count;
        a.mean_utilization_percent = u->mean;
        a.max_utilization_percent = u->max;
        a.burstiness_percent = BurstinessPercent(*u);
        ReplicasRule r = RecommendedReplicas(u->mean, a.burstiness_percent);
        a.recommended_replicas = r.replicas;
        a.rule = r.rule;
      }
      advice.push_back(std::move(a));
    }
  }
  return advice;
}

}  // namespace gpuadmit
