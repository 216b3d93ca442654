// Replay: an arrival stream of pods played against a simulated cluster, through the same review
// code `serve` runs (Review, with a reservation ledger) or, for the baseline, without gpuadmit,
// while the scheduler model (scheduler_model.h) binds what it can. Admission, watch visibility
// and binding interleave as in a live cluster: a pod is reviewed when it arrives, appears in the
// inventory `watch_delay` later (its reservation ends, its need is queued), and is offered to the
// scheduler `bind_delay` after arriving; a pod that fits nowhere stays Pending and is tried again,
// in arrival order, whenever a pod leaves. A pod with a duration leaves that long after it is
// bound. Time is simulated: nothing waits.
//
//   ReplayResult with = Replay(cluster, arrivals, &policy, {});
//   ReplayResult without = Replay(cluster, arrivals, nullptr, {});  // the baseline
//
// This is the engine of `gpuadmit simulate` (issue 14); the command, controller expansion, the
// Alibaba trace and the charts are not built yet.
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
};

struct ReplayResult {
  int arrived = 0;
  int placed = 0;     // bound at the end of the stream
  int pending = 0;    // never bound
  int fallbacks = 0;  // reviews that moved a MIG ask to a smaller profile
  std::map<std::string, int> placed_by_resource;  // GPU resource -> pods bound asking for it
  std::vector<double> waits;                      // seconds from arrival to binding, per bound pod
};

// Errors when `cluster` is not a v1 List of Nodes and Pods, or a pod of `arrivals` has no name.
// `policy` null: the baseline, every pod as it was created.
Result<ReplayResult> Replay(const nlohmann::json& cluster, std::span<const Arrival> arrivals,
                            const Policy* policy, const ReplayOptions& options);

}  // namespace gpuadmit
