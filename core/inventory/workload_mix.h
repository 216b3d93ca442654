// The workload mix: the shapes of the GPU pods the cluster holds, bound or queued, with how many
// pods have each. Fragmentation-aware placement (node_ranking.h, strategy `fragmentation`)
// weighs a node's free capacity against it, as FGD (Weng et al., USENIX ATC 2023) weighs it
// against the distribution of arriving tasks: the pods present stand for the pods to come.
//
// A shape is the pod's primary GPU resource (whole GPUs, else a MIG profile, else shared
// replicas) and count, its cpu and memory requests, and the GPU products it may run on. Pods
// made from one template share a shape, so a cluster of 150,000 pods has tens or hundreds of
// shapes, not thousands.
//
//   PodShape s = ShapeOf(record);   // nullopt for a pod that asks no GPU resource
//   mix[*s] += 1;
//
// Thread safety: pure functions and value types.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kube/kube_objects.h"

namespace gpuadmit {

struct PodShape {
  std::string resource;  // nvidia.com/gpu, nvidia.com/mig-..., nvidia.com/gpu.shared
  int64_t count = 0;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::vector<std::string> products;  // PodRecord::gpu_products, sorted; empty: any
  auto operator<=>(const PodShape&) const = default;
};

struct WeightedShape {
  PodShape shape;
  int64_t pods = 0;
};

// 128 shapes: a snapshot keeps the most common, and the rest are the long tail. On the Alibaba
// trace's 112 shapes, keeping 32 leaves 0.18% of the GPUs unallocated at full demand, 64 keep
// 0.02-0.26% and 128 0.00-0.05% (seeds 42-51, docs/decision-quality.md); weighing a node against
// one shape is a few comparisons.
inline constexpr size_t kMixShapes = 128;

// The pod's shape, or nullopt when it asks no managed resource.
std::optional<PodShape> ShapeOf(const PodRecord& pod);

}  // namespace gpuadmit
