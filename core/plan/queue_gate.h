// Plan stage 4, the queue gate (waiting for GPUs): a Pod that would only wait in the
// scheduler's retry loop is held back instead, with the scheduling gate <prefix>/capacity, until
// the gate lifter (the leader, over core/inventory/capacity_queue.h) releases it onto a node
// where it fits, or after queue.timeout. The pod is gated when the policy queues its namespace
// (queue.enabled, queue.namespaces), it is a Pod (not a template) that asks for a GPU resource
// as decided so far, is not opted out, has no spec.nodeName, and either
//   - its primary ask (whole GPUs, else its MIG profile, else its shared replicas) is free on no
//     node it may use now, net of reservations and queued demand, under the constraints the
//     patch will give it (worker-default tolerations included); or
//   - pods already wait behind the gate (InventorySnapshot::GatedBy): arrival order holds, and
//     the lifter releases it at once if it fits outside the head's hold.
// A gated pod gets the gate, the annotation <prefix>/queue ("waiting: 8 nvidia.com/gpu free on no
// node it may use"), and PlanState::gated: placement then adds no node affinity and the devices
// earlier stages counted are dropped, so no reservation is made for it.
//
//   PlanQueueGate(pod, context, state, decision);
//   decision.scheduling_gate;  // "gpuadmit.io/capacity", or "" when the pod goes straight on
//
// Thread safety: pure function.
#pragma once

#include <string>

#include "core/plan/planner.h"

namespace gpuadmit {

// The gate gpuadmit adds and its lifter removes: "<prefix>/capacity".
std::string CapacityGate(const Policy& policy);

void PlanQueueGate(const PodRequest& pod, const PlanContext& context, PlanState& state,
                   Decision& decision);

}  // namespace gpuadmit
