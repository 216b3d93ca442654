// What the sharing stage tests share: a cluster with MIG, MPS and time-slicing capacity, a
// one-container GPU pod, and a runner for plan stages 1 and 2 as the planner runs them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/plan/estimation.h"
#include "core/plan/planner.h"
#include "core/plan/sharing.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit::testing {

using nlohmann::json;

inline constexpr char kGpu[] = "nvidia.com/gpu";
inline constexpr char kShared[] = "nvidia.com/gpu.shared";
inline constexpr char k1g[] = "nvidia.com/mig-1g.10gb";
inline constexpr char k2g[] = "nvidia.com/mig-2g.20gb";

// The demo cluster (MIG 1g.10gb free on gpu-small and gpu-medium, 2g.20gb on gpu-medium) plus a
// node sharing 2 GPUs 4 ways with MPS and one sharing 2 GPUs 4 ways by time-slicing.
inline json SharingCluster() {
  json cluster = DemoCluster();
  AddSharedGpuNode(cluster, "gpu-mps", "mps", 2, 4);
  AddSharedGpuNode(cluster, "gpu-ts", "time-slicing", 2, 4);
  return cluster;
}

inline json GpuPod(json annotations = json::object(), json labels = json::object(), int gpus = 1) {
  json limits = {{kGpu, std::to_string(gpus)}};
  return {{"metadata",
           {{"name", "p"}, {"annotations", std::move(annotations)}, {"labels", std::move(labels)}}},
          {"spec",
           {{"containers",
             {{{"name", "main"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}}}};
}

inline json Typed(const char* type) { return {{"gpu-autoscaler.io/workload-type", type}}; }

struct Outcome {
  std::unique_ptr<PodRequest> request;  // what `state` starts from: it must outlive it
  Decision d;
  PlanState state;
};

// Stages 1 and 2 over `pod` in namespace "default".
inline Outcome Sharing(const json& pod, const InventorySnapshot& snapshot,
                       const Policy& policy = {}) {
  auto request = std::make_unique<PodRequest>(
      PodRequest::From("default", "Pod default/p", pod.at("spec"), &pod.at("metadata"), true));
  PlanContext context{snapshot, policy};
  PlanState state{request->needs.containers, request->needs.effective};
  Decision d;
  PlanRequirements(*request, context, state, d);
  PlanSharing(*request, context, state, d);
  return {std::move(request), std::move(d), std::move(state)};
}

inline bool Traced(const Decision& d, const std::string& line) {
  return std::find(d.trail.begin(), d.trail.end(), line) != d.trail.end();
}

inline std::string SwapsOf(const Decision& d) {
  std::string out;
  for (const ResourceSwap& s : d.swaps) out += (out.empty() ? "" : ",") + s.from + "->" + s.to;
  return out;
}

class SharingTest : public ::testing::Test {
 protected:
  InventorySnapshot snapshot_ = SnapshotOf(SharingCluster());
};

}  // namespace gpuadmit::testing
