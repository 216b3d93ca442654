// Replay: an arrival stream of pods played against a simulated cluster, through the same review
// code `serve` runs (Review, with a reservation ledger) or, for the baseline, without gpuadmit,
// while the scheduler model (scheduler_model.h) binds what it can. Admission, watch visibility
// and binding interleave as in a live cluster: a pod is reviewed when it arrives, appears in the
// inventory `watch_delay` later (its reservation ends, its need is queued), and is offered to the
// scheduler `bind_delay` after arriving; a pod that fits nowhere stays Pending and is tried again,
// in arrival order, whenever a pod leaves (on the node it left, the one with more room). A pod with
// a duration leaves that long after it is bound. Time is simulated: nothing waits.
//
//   ReplayResult with = Replay(cluster, arrivals, &policy, {});
//   ReplayResult without = Replay(cluster, arrivals, nullptr, {});  // the baseline
//
// With the policy's queue enabled (waiting for GPUs), a GPU pod of a queued
// namespace that the scheduler finds no node for on its first try is held gated in a
// CapacityQueue (core/inventory/capacity_queue.h) instead of Pending, and so is every such pod
// that arrives while the queue is not empty (it must not overtake the pods waiting). The queue
// is asked what to release whenever a pod leaves, a pod joins it, or a pod's timeout comes; a
// pod released for capacity is bound to the node the queue counted it on (the lifter pins it
// there with a node affinity), one released for its timeout or as unplaceable goes to the
// scheduler like any pod, Pending if it fits nowhere.
//
// Several replicas of the webhook (options.replicas) each keep their own ledger, reviews going
// to them in turn, as the kube-apiserver spreads calls over a Service: a device two ledgers both
// count on is "counted twice".
//
// Thread safety: pure function over its arguments.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/result.h"

namespace gpuadmit {

struct Arrival {
  double at = 0;                   // seconds from the start
  std::optional<double> duration;  // seconds it runs once bound; none: it stays
  nlohmann::json pod;              // a v1 Pod, as it is created (metadata.name, namespace, spec)
};

struct ReplayOptions {
  double watch_delay = 0.01;  // seconds from admission to the pod in the inventory's watch
  double bind_delay = 0.05;   // seconds from admission to the scheduler's first try
  int replicas = 1;           // webhook replicas, each with its own reservation ledger
  int percentage_of_nodes_to_score = 0;  // the scheduler's (SchedulerSearch); 0: adaptive
};

// The cluster after an arrival's turn, in GPU equivalents (gpu_equivalents.h): the GPU ask of
// the pods arrived so far, as created, and what the bound pods hold.
struct CurveSample {
  double demand_gpus = 0;
  double allocated_gpus = 0;
  double at = 0;  // seconds: the arrival's time, or the last event's for the final sample
};

struct ReplayResult {
  int arrived = 0;
  int placed = 0;            // bound at the end of the stream
  int pending = 0;           // never bound
  int gpu_pods_arrived = 0;  // pods asking for a GPU resource, as created
  int gpu_pods_placed = 0;
  int fallbacks = 0;            // reviews that moved a MIG ask to a smaller profile
  int sharing_conversions = 0;  // reviews that applied MIG, MPS or time-slicing
  int preferred = 0;            // bound pods gpuadmit gave a preferred node
  int preferred_honoured = 0;   // of those, bound to that node
  int64_t counted_twice = 0;    // devices a review counted on beyond what the node has left
  double capacity_gpus = 0;     // every node's GPU resources
  double shared_gpus = 0;       // of those, the GPUs time-sliced as nvidia.com/gpu.shared replicas
  double demand_gpus = 0;       // the arrived pods' GPU ask, as created
  double allocated_gpus = 0;    // held by bound pods at the end
  std::map<std::string, int> placed_by_resource;  // GPU resource -> pods bound asking for it
  std::vector<double> waits;                      // seconds from arrival to binding, per bound pod
  std::vector<double> multi_gpu_waits;            // the same, for pods asking more than one GPU
  int queued = 0;                  // pods held gated in the capacity queue (policy queue enabled)
  int queue_timeouts = 0;          // of those, released for their timeout (capacity never came)
  int queue_unplaceable = 0;       // released at once: no allowed node could ever take them
  int queue_waiting = 0;           // still gated at the end (counted in `pending`)
  std::vector<CurveSample> curve;  // before each arrival, and at the end
  // Claim replays (claim_replay.h): for each pod that no node could take when it arrived, the
  // share of the GPUs then unallocated: capacity there, but not in a shape it could use.
  std::vector<double> stranded_at_rejection;
};

// Errors when `cluster` is not a v1 List of Nodes and Pods, or a pod of `arrivals` has no name.
// `policy` null: the baseline, every pod as it was created.
Result<ReplayResult> Replay(const nlohmann::json& cluster, std::span<const Arrival> arrivals,
                            const Policy* policy, const ReplayOptions& options);

}  // namespace gpuadmit
