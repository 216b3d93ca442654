// Plan stage 5, placement: node affinity on kubernetes.io/hostname to
// the best node by the policy's strategy (Pods only), GPU-type preference, and the worker
// defaults (tolerations for GPU taints, an in-memory /dev/shm). A pod the queue gate holds back
// (PlanState::gated) gets the worker defaults only: no node affinity, no devices counted.
//
// Thread safety: pure function.
#pragma once

#include <string_view>

#include "core/plan/planner.h"

namespace gpuadmit {

// Where the worker defaults mount the in-memory volume.
inline constexpr std::string_view kShmPath = "/dev/shm";

// True when `container` mounts a volume at kShmPath: the placement stage asks it of the pod, the
// patch writer of each GPU container it would give one.
bool MountsShm(JsonView container);

void PlanPlacement(const PodRequest& pod, const PlanContext& context, PlanState& state,
                   Decision& decision);

}  // namespace gpuadmit
