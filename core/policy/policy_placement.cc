// The placement section of the policy: how a node is chosen, how the choice is written (node
// affinity), what counts as an idle GPU, the score's weights, the node filter on GPU metrics
// and GPU type preferences.
#include <limits>

#include "core/policy/policy_sections.h"

namespace gpuadmit {
namespace {

// 1..100: the range the apiserver accepts for a preferred scheduling term's weight.
constexpr int kMinWeight = 1;
constexpr int kMaxWeight = 100;

void ReadGpuType(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                 GpuTypePreference& out) {
  v.Map(item, at,
        {{"product",
          [&](const YAML::Node& n, const std::string& p) { v.NonEmptyString(n, p, out.product); },
          true},
         {"weight", [&](const YAML::Node& n, const std::string& p) {
            v.Int(n, p, kMinWeight, kMaxWeight, out.weight);
          }}});
}

}  // namespace

void ReadPlacement(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                   PlacementPolicy& out) {
  const double kAnyWeight = std::numeric_limits<double>::max();
  v.Map(node, path,
        {{"enabled", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.enabled); }},
         {"strategy",
          [&](const YAML::Node& n, const std::string& p) {
            v.Enum<PlacementStrategy>(n, p,
                                      {{"most-idle", PlacementStrategy::kMostIdle},
                                       {"best-fit", PlacementStrategy::kBestFit},
                                       {"first-fit", PlacementStrategy::kFirstFit},
                                       {"worst-fit", PlacementStrategy::kWorstFit},
                                       {"score", PlacementStrategy::kScore},
                                       {"fragmentation", PlacementStrategy::kFragmentation},
                                       // The spellings of gpu-autoscaler's binPacking.strategy.
                                       {"bestfit", PlacementStrategy::kBestFit},
                                       {"firstfit", PlacementStrategy::kFirstFit},
                                       {"worstfit", PlacementStrategy::kWorstFit}},
                                      out.strategy);
          }},
         {"affinity",
          [&](const YAML::Node& n, const std::string& p) {
            v.Enum<AffinityMode>(
                n, p,
                {{"preferred", AffinityMode::kPreferred}, {"required", AffinityMode::kRequired}},
                out.affinity);
          }},
         {"podsWithoutGpus",
          [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.pods_without_gpus); }},
         {"preferredWeight",
          [&](const YAML::Node& n, const std::string& p) {
            v.Int(n, p, kMinWeight, kMaxWeight, out.preferred_weight);
          }},
         {"idle",
          [&](const YAML::Node& n, const std::string& p) {
            v.Map(n, p,
                  {{"maxUtilization",
                    [&](const YAML::Node& m, const std::string& mp) {
                      v.Number(m, mp, 0, 100, out.idle_max_utilization_percent);
                    }},
                   {"maxMemory", [&](const YAML::Node& m, const std::string& mp) {
                      v.Number(m, mp, 0, 100, out.idle_max_memory_percent);
                    }}});
          }},
         {"score",
          [&](const YAML::Node& n, const std::string& p) {
            bool read = v.Map(n, p,
                              {{"memoryWeight",
                                [&](const YAML::Node& m, const std::string& mp) {
                                  v.Number(m, mp, 0, kAnyWeight, out.score_memory_weight);
                                }},
                               {"idleWeight", [&](const YAML::Node& m, const std::string& mp) {
                                  v.Number(m, mp, 0, kAnyWeight, out.score_idle_weight);
                                }}});
            if (read && out.score_memory_weight == 0 && out.score_idle_weight == 0) {
              v.Report(n, p + ": memoryWeight and idleWeight must not both be 0");
            }
          }},
         {"filter",
          [&](const YAML::Node& n, const std::string& p) {
            v.Map(n, p,
                  {{"minFreeMemory",
                    [&](const YAML::Node& m, const std::string& mp) {
                      v.MemoryMib(m, mp, out.filter_min_free_memory_mib);
                    }},
                   {"maxUtilization", [&](const YAML::Node& m, const std::string& mp) {
                      v.Number(m, mp, 0, 100, out.filter_max_utilization_percent);
                    }}});
          }},
         {"gpuTypes", [&](const YAML::Node& n, const std::string& p) {
            out.gpu_types.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              ReadGpuType(v, item, at, out.gpu_types.emplace_back());
            });
          }}});
}

}  // namespace gpuadmit
