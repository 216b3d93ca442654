// GPU equivalents: the one unit simulate measures capacity, demand and allocation in, and the
// sharing stage its estimated savings (core/plan/decision_counts.h), whatever form a GPU takes.
// A whole GPU (nvidia.com/gpu) is 1, a MIG instance its compute slices over the 7 of a whole
// A100/H100/H200 (2g.20gb: 2/7), a time-sliced or MPS replica (nvidia.com/gpu.shared) 1 over the
// replicas its node makes of each GPU (the label nvidia.com/gpu.replicas, which GPU feature
// discovery sets; 1 when absent).
//
//   double g = GpuEquivalents("nvidia.com/mig-2g.20gb", 3, 1);  // 6/7
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/kube/kube_objects.h"
#include "core/kube/requirements.h"

namespace gpuadmit {

// 7: the compute slices of a whole MIG-capable GPU (A30s have 4, counted as 4/7 of one).
inline constexpr double kMigSlicesPerGpu = 7;

// What `count` of `resource` amounts to, a shared replica being 1/`replicas_per_gpu` of a GPU;
// 0 for resources that are no GPU.
double GpuEquivalents(std::string_view resource, int64_t count, int64_t replicas_per_gpu);

// The replicas per GPU of a node's nvidia.com/gpu.shared (its nvidia.com/gpu.replicas label).
int64_t ReplicasPerGpu(const NodeFacts& node);

// Every GPU resource of `list` summed, shared replicas at `replicas_per_gpu`.
double GpuEquivalents(const ResourceList& list, int64_t replicas_per_gpu);

}  // namespace gpuadmit
