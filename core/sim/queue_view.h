// The capacity queue's view of the simulated cluster: a SimNode as the NodeRoom the
// queue weighs (core/inventory/capacity_queue.h), and a pod about to be gated as the QueuedPod
// it holds. cpu, memory and the pod count are compared with the GPU resources, so a pod the
// queue releases onto a node passes NodeResourcesFit there.
//
//   rooms[n] = RoomOf(nodes[n]);
//   queue.Add(QueuedPodOf(key, arrival.at, pod_object, sim_pod, nodes));
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/inventory/capacity_queue.h"
#include "core/sim/scheduler_model.h"

namespace gpuadmit {

// `node`'s allocatable and free: its extended resources, "cpu" (milli), "memory" (bytes) and
// "pods" (unlimited, 2^30, when the node states none, as NodeResourcesFit skips it then).
NodeRoom RoomOf(const SimNode& node);

// The pod `pod` (spec.priority from `object`, 0 when absent) as the queue holds it: its ask
// (extended resources, cpu, memory, one pod) and the indices of `nodes` it may use (its
// spec.nodeName, or those CanRunOn accepts; none: one index past the end, which Lift skips).
QueuedPod QueuedPodOf(std::string key, double arrived_at, const nlohmann::json& object,
                      const SimPod& pod, std::span<const SimNode> nodes);

}  // namespace gpuadmit
