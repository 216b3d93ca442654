// Plan stage 3, the MIG fallback (seed 003): each MIG profile the pod asks for that is free on
// no node the pod may use is replaced by the next profile of its chain that is free on such a
// node (by default the smaller profiles of the same GPU product, largest first), and the
// annotation <prefix>/fallback records it ("2g.20gb->1g.10gb"). Nothing free: unchanged with a
// warning, or denied if the policy says so.
//
// Thread safety: pure function.
#pragma once

#include "core/planner.h"

namespace gpuadmit {

void PlanMigFallback(const PodRequest& pod, const PlanContext& context, PlanState& state,
                     Decision& decision);

}  // namespace gpuadmit
