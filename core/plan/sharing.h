// Plan stage 2, the sharing mode (seed 002): policy rules first (highest priority first, first
// match wins), then the default flow; applying MIG, MPS or time-slicing rewrites nvidia.com/gpu
// and steers to nodes that offer the mode, only where such nodes have free capacity.
//
// Thread safety: pure function.
#pragma once

#include "core/plan/planner.h"

namespace gpuadmit {

void PlanSharing(const PodRequest& pod, const PlanContext& context, PlanState& state,
                 Decision& decision);

}  // namespace gpuadmit
