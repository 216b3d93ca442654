// Claim steering: the ResourceClaim the resourceclaim controller makes from a template for one
// pod is pinned, at CREATE, to the GPU where the scheduler's allocator strands the least
// (core/dra/device_choice.h), instead of the allocator's own first fit.
//
//   ClaimDecision d = SteerClaim(claim, snapshot, policy, reservations.HeldUnder(key));
//
// What is written: each one-device request gets, ahead of its alternatives, the first
// alternative that can be had, with one more selector naming the GPU chosen
// (`device.attributes['gpu.nvidia.com'].parentUUID == '...'`, or `.uuid` for a whole GPU), named
// `<alternative>-steered`; a request written `exactly` becomes a firstAvailable list of the
// pinned copy and the request as written (both named after the request). The alternatives as
// written follow, so the claim is allocated as before if that GPU is gone by the time the
// scheduler gets to it; the scheduler's DynamicResources score prefers a node where an earlier
// alternative fits, and the pod's own preferred node (its admission's) is the node chosen on.
// <prefix>/steered-to says where.
//
// Not steered: claims not made for a pod (shared by name), requests for several devices or all,
// requests pinned already, and GPUs without shared counters (devices cut already: one free device
// is as good as another). The caller steers only where the scheduler takes firstAvailable
// (policy dra.firstAvailable). Nothing is reserved: a claim the watch has not yet shown allocated
// counts, by its pin, as taking the device the allocator's first fit takes on that GPU
// (DraDevices::DevicesByNode).
//
// Thread safety: pure function.
#pragma once

#include <vector>

#include "core/admission/claim_review.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"
#include "core/json/json_view.h"
#include "core/policy/policy.h"

namespace gpuadmit {

// The owner Pod of `claim` ("namespace/name", from its ownerReferences), "" for none.
std::string ClaimOwnerPod(JsonView claim);

// The steering of `claim` (a ResourceClaim as it will be stored), whose owner pod's admission
// counted on `owner_claims` (its reservation; empty: any node).
ClaimDecision SteerClaim(JsonView claim, const InventorySnapshot& snapshot, const Policy& policy,
                         const std::vector<Claim>& owner_claims);

}  // namespace gpuadmit
