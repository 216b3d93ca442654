// Plan stage 1, requirements: the GPU count a pod's parallelism implies
// (tp x pp x max(dp, cp, dcp), from annotations or inference-server arguments), checked against
// its nvidia.com/gpu as the policy says (warn, fill, correct), and its GPU memory need per GPU
// (an annotation, else the model name's heuristic).
//
// Thread safety: pure function.
#pragma once

#include "core/plan/planner.h"

namespace gpuadmit {

void PlanRequirements(const PodRequest& pod, const PlanContext& context, PlanState& state,
                      Decision& decision);

}  // namespace gpuadmit
