// The workload mix: the shapes of the GPU pods the cluster holds, bound or queued, with how many
// pods have each. Fragmentation-aware placement (node_ranking.h, strategy `fragmentation`)
// weighs a node's free capacity against it, as FGD (Weng et al., USENIX ATC 2023) weighs it
// against the distribution of arriving tasks: the pods present stand for the pods to come.
//
// A shape is the pod's primary GPU resource (whole GPUs, else a MIG profile, else shared
// replicas) and count, with its cpu and memory requests rounded up to a power of two, so a
// cluster of 150,000 pods has tens of shapes, not thousands.
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
  int64_t cpu_milli = 0;     // rounded up to a power of two
  int64_t memory_bytes = 0;  // likewise
  auto operator<=>(const PodShape&) const = default;
};

struct WeightedShape {
  PodShape shape;
  int64_t pods = 0;
};

// 32 shapes: a snapshot keeps the most common; the rest are the long tail (under 1/32 of pods
// each at most) and weighing them would cost more than they change.
inline constexpr size_t kMixShapes = 32;

// The pod's shape, or nullopt when it asks no managed resource.
std::optional<PodShape> ShapeOf(const PodRecord& pod);

}  // namespace gpuadmit
