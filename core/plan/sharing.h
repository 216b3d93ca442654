// Plan stage 2, the sharing mode: policy rules first (highest priority first, first
// match wins), then the default flow; applying MIG, MPS or time-slicing rewrites nvidia.com/gpu
// and steers to nodes that offer the mode, only where such nodes have free capacity. The workload
// type rules and flow read is the pod's workload-type label or annotation, else the one its GPU
// containers' images and command lines show (core/plan/workload_type.h), traced and annotated
// (<prefix>/detected-workload-type) when detection named it.
//
// Thread safety: pure function.
#pragma once

#include "core/plan/planner.h"

namespace gpuadmit {

void PlanSharing(const PodRequest& pod, const PlanContext& context, PlanState& state,
                 Decision& decision);

}  // namespace gpuadmit
