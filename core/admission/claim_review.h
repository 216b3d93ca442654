// Claims for DRA devices: what gpuadmit changes in a ResourceClaim, or in the claim a
// ResourceClaimTemplate makes, at CREATE (a claim's spec is immutable after).
//
//   if (IsClaimKind(request.kind)) {
//     ClaimDecision d = PlanClaim(request.kind, object, snapshot, policy);
//   }
//
// Each device request written `exactly`:
//   - asking for a MIG profile (a `profile == '...'` selector, or a DeviceClass that selects one):
//     with policy dra.firstAvailable, the request becomes a `firstAvailable` list: the profile
//     asked, then the fallbacks in the MIG fallback's order (core/plan/mig_fallback.h), for the
//     scheduler's allocator to walk; without it, the profile is chosen here, as for a pod: kept
//     when some node has it free, else the first fallback free somewhere replaces it, and the
//     <prefix>/fallback annotation says so. <prefix>/mig-fallback: "false" on the object opts out.
//   - asking for more than one whole GPU, with policy dra.alignPcieRoot: a matchAttribute
//     constraint on resource.kubernetes.io/pcieRoot is added, where some node has that many GPUs
//     under one root.
// Requests already written as firstAvailable, or for all devices, are left as written.
//
// A Pod that asks no extended resource but names ResourceClaimTemplates the inventory knows is
// planned as asking what its templates' first alternatives ask (AddClaimNeeds): the MIG fallback
// and placement steer it to a node where that is free (or, failing that, where a fallback is), so
// the allocator, which takes the first alternative that fits on the node the scheduler chose,
// takes the one the decision counted on.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "core/admission/json_patch.h"
#include "core/inventory/inventory.h"
#include "core/json/json_view.h"
#include "core/kube/group_version_kind.h"
#include "core/plan/decision_counts.h"
#include "core/plan/planner.h"
#include "core/policy/policy.h"

namespace gpuadmit {

struct ClaimDecision {
  JsonPatch patch;
  std::vector<std::string> trail;
  std::vector<std::string> warnings;
  DecisionCounts tally;
  std::string asked;  // what the requests ask, "gpu: mig-2g.20gb x1", "; " between
};

// A resource.k8s.io ResourceClaim or ResourceClaimTemplate.
bool IsClaimKind(const GroupVersionKind& kind);

// When `pod` asks no extended resource and its spec names ResourceClaimTemplates of its
// namespace that `snapshot` holds, adds what their requests' first alternatives ask to its needs
// (as one more, synthetic, container) and sets claims_devices. Returns whether it did.
bool AddClaimNeeds(PodRequest& pod, JsonView pod_spec, const InventorySnapshot& snapshot);

// What a decision for a claims_devices pod may write: its containers ask nothing, so the count,
// swap, environment, resource-default and /dev/shm changes are dropped; the rest stays.
void KeepPodLevelChanges(Decision& d);

// The decision for the claim spec of `object`, of kind `kind` (IsClaimKind).
ClaimDecision PlanClaim(const GroupVersionKind& kind, JsonView object,
                        const InventorySnapshot& snapshot, const Policy& policy);

}  // namespace gpuadmit
