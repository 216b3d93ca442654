// Queued demand: where the pods that wait for the scheduler count (docs/decisions.md, "A
// device's life"). A device is spoken for from admission until its pod ends: by the reservation
// ledger while the pod is not in the watch yet, by the pod's queued need here while it is in the
// watch but unbound, by its node's `used` once bound; Succeeded, Failed or deleted, it holds
// nothing. Without this step, the twelve pods of a Deployment scaling up would leave every
// device they are about to take looking free until the scheduler binds them, and a thirteenth
// would be sent to wait behind them instead of falling back.
//
// Queued pods are taken in the order they were created (then by namespace/name). Each counts on
// the first of these where it may run (CanRunOn: ready, not cordoned, selector, required
// affinity, taints) and where its whole need fits in what is left (allocatable - used - queued
// so far):
//   1. the node it is pinned to (a required kubernetes.io/hostname), and nowhere else;
//   2. the node its single-hostname preferred term names: gpuadmit's choice, whose reservation
//      ended when the pod appeared in the watch;
//   3. the node offering its first needed resource with the most of it free before queued demand
//      (ties by name).
// A pod that fits nowhere is unplaceable and holds nothing: a resource it cannot get is not made
// to look exhausted by it. Nor does a pod the scheduler has marked Unschedulable: the scheduler
// found no node for it, possibly for a reason the inventory does not see (CPU, memory, volumes,
// pod affinity), and counting it would hide devices that nobody is about to use.
//
//   ResourceList unplaceable = CountQueuedDemand(queued_in_creation_order, snapshot_nodes);
//
// Thread safety: pure function over its arguments.
#pragma once

#include <span>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {

// Adds the need of each pod of `queued` (unbound, non-terminal, in queue order) to the `queued`
// list of the node it counts on, among `nodes` (sorted by name, `queued` empty on entry).
// Returns the summed need of the pods counted nowhere (unplaceable or marked Unschedulable).
ResourceList CountQueuedDemand(std::span<const PodRecord* const> queued,
                               std::vector<NodeInventory>& nodes);

}  // namespace gpuadmit
