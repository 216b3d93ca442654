// Plan stage 3, the MIG fallback: each MIG profile the pod asks for that is free on
// no node the pod may use (its nodeSelector, required node affinity, tolerations, node readiness;
// free net of reservations) is replaced by the first profile of its chain that is free on such a
// node, and the annotation <prefix>/fallback records it ("2g.20gb->1g.10gb"). The chain is the
// policy's explicit one for the asked profile, else the smaller profiles of the same GPU product
// from the MIG catalog (core/plan/mig_catalog.h), largest first; for a product the catalog does not
// know, the smaller profiles its nodes offer. Only nodes of the GPU products that offer the asked
// profile count. Never a profile with less nominal memory than <prefix>/min-gpu-memory ("20Gi",
// or bare MiB). <prefix>/mig-fallback: "false" (or <prefix>/optimize: "false") opts a pod out.
// Nothing free: unchanged with a warning, or denied if the policy says so.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plan/planner.h"

namespace gpuadmit {

// The profiles a request for the MIG profile `profile` falls back to, in order: the chain the
// fallback walks, over the GPU products whose nodes offer `profile` (or, when none does, every
// product cut into MIG devices). `source`, when given, says where the order came from.
std::vector<std::string> MigFallbackOrder(const InventorySnapshot& snapshot, const Policy& policy,
                                          std::string_view profile, std::string* source = nullptr);

void PlanMigFallback(const PodRequest& pod, const PlanContext& context, PlanState& state,
                     Decision& decision);

}  // namespace gpuadmit
