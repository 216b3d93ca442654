// The capacity queue (core/inventory/capacity_queue.h) as the leader sees the live cluster: the
// InventorySnapshot's nodes as the NodeRooms it weighs, and the pods it holds gated as the
// QueuedPods it orders. Built afresh from each snapshot, so a new leader rebuilds the same queue
// from the API alone: arrival is the pod's creationTimestamp, priority its spec.priority.
//
//   std::vector<NodeRoom> rooms = RoomsOf(*snapshot);
//   for (const PodRecord& pod : snapshot->gated())
//     if (auto q = QueuedPodOf(pod, gate, snapshot->nodes())) queue.Add(std::move(*q));
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/inventory/capacity_queue.h"
#include "core/inventory/inventory.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {

// Every node of `snapshot`, in its order: allocatable is the managed resources, "cpu" (milli)
// and "memory" (bytes), those the node does not state being unlimited (the scheduler does not
// check them then); free is NodeInventory::Free and ComputeFree, net of bound pods and of the
// unbound pods counted there (among them those already released onto it). A node that is not
// Ready or is cordoned keeps its allocatable (a pod may still fit there one day) but has no room.
std::vector<NodeRoom> RoomsOf(const InventorySnapshot& snapshot);

// `pod` as the queue holds it, when it carries the scheduling gate `gate`: its managed need
// plus cpu and memory, spec.priority, arrival at its creationTimestamp (seconds since the
// epoch), and the nodes it may use (CanRunOn over its nodeSelector, affinity and tolerations;
// none: one index past the end, which Lift treats as never placeable). nullopt when it does not
// carry `gate`, or is bound.
std::optional<QueuedPod> QueuedPodOf(const PodRecord& pod, std::string_view gate,
                                     std::span<const NodeInventory> nodes);

// An RFC 3339 time as Kubernetes writes it ("2026-11-26T08:12:36Z", fractions allowed) in
// seconds since the epoch; nullopt when it is not one.
std::optional<double> ParseKubeTime(std::string_view text);

}  // namespace gpuadmit
