// Claim replay: an arrival stream of pods that name ResourceClaimTemplates, played against a
// cluster whose GPUs are DRA devices (ResourceSlices, DeviceClasses and the templates in the
// cluster file), with kube-scheduler's DRA allocation modelled: what `gpuadmit simulate` runs
// when the cluster has ResourceSlices and the stream names claim templates.
//
//   ReplayResult as_written = ClaimReplay(cluster, arrivals, nullptr).value();  // the baseline
//   ReplayResult steered = ClaimReplay(cluster, arrivals, &policy).value();
//
// Each arrival, in turn:
//   1. with a policy, the pod is reviewed (Review, with a reservation ledger), as serve would;
//   2. the resourceclaim controller's claim is made from each template the pod names (owned by
//      the pod, named <pod>-<claim>), and reviewed too (firstAvailable, steering);
//   3. the scheduler filters the nodes where every claim can be allocated and the pod passes
//      (SchedulerModel), and scores them: SchedulerModel's scores plus DynamicResources x2
//      (per claim request, 8 - the index of the firstAvailable entry allocated, normalised to
//      the best node); the first best node in name order wins (kube-scheduler: one at random);
//   4. the allocator's first fit on that node allocates each request: its alternatives in
//      order, for each the first devices in slice then device order that the alternative
//      selects (its selectors read as SelectorFacts) and the shared counters still allow.
// A pod that no node can take waits, and is tried again in arrival order whenever a pod leaves
// (with `drop_unplaced`, it leaves at once instead, as a job that gives up); a pod leaves
// `duration` after it is bound, and its claims are deallocated. There is no watch
// delay: each review sees every allocation before it.
//
// Figures, in GPU equivalents (core/kube/gpu_equivalents.h): capacity is one per GPU (a device
// without a parent); demand is what each claim's first alternative as created asks; allocated
// is what the allocated devices are. `fallbacks` counts claims allocated on a smaller profile
// than the one first asked. Not modelled: allocationMode All, constraints, CEL beyond
// SelectorFacts, preemption.
//
// Thread safety: pure function over its arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "core/policy/policy.h"
#include "core/result.h"
#include "core/sim/replay.h"

namespace gpuadmit {

// Whether `cluster` has ResourceSlices and some arrival names a ResourceClaimTemplate.
bool IsClaimScenario(const nlohmann::json& cluster, std::span<const Arrival> arrivals);

// Errors when a pod names a template the cluster file does not hold, or asks devices with
// allocationMode All.
Result<ReplayResult> ClaimReplay(const nlohmann::json& cluster, std::span<const Arrival> arrivals,
                                 const Policy* policy, bool drop_unplaced = false);

}  // namespace gpuadmit
