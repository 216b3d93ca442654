// The planner: what to change in one pod spec, decided from the pod's needs, the inventory
// snapshot, the GPU metrics and the policy. A pure function: same inputs, same decision.
//
//   PodRequest pod = PodRequest::From(ns, name, pod_spec, &metadata, /*is_pod=*/true);
//   Decision d = Plan(pod, {snapshot, policy});
//   d.swaps        e.g. {nvidia.com/mig-2g.20gb -> nvidia.com/mig-1g.10gb}
//   d.annotations  e.g. {gpuadmit.io/fallback: "2g.20gb->1g.10gb"}
//
// A plan runs in stages, each in its own file, each reading what the earlier ones decided
// (PlanState) and adding to the Decision:
//   1. requirements  GPU count from parallelism, GPU memory need    core/plan/estimation.h
//   2. sharing       exclusive / MIG / MPS / time-slicing           core/plan/sharing.h
//   3. MIG fallback  a smaller profile when the asked one is free nowhere core/plan/mig_fallback.h
//   4. queue gate    a scheduling gate while it fits nowhere               core/plan/queue_gate.h
//   5. placement     node affinity, GPU type preference, worker defaults    core/plan/placement.h
//
// Thread safety: pure functions over immutable inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"
#include "core/json/json_view.h"
#include "core/kube/requirements.h"
#include "core/kube/scheduling.h"
#include "core/plan/decision_counts.h"
#include "core/plan/view_map.h"
#include "core/policy/policy.h"

namespace gpuadmit {

using StringMap = std::map<std::string, std::string, std::less<>>;

struct PodRequest {
  std::string ns;
  std::string name;     // for messages: "Pod default/train-0" or "Deployment default/web"
  bool is_pod = false;  // a Pod, not a template: only Pods reserve devices and get pinned
  bool pin_node = false;  // a template steered to a node all the same (a workload's pinNode)
  // Its GPU need is its DRA claims' (core/admission/claim_review.h), not its containers': the
  // count and sharing stages leave it alone, and nothing is written into its containers.
  bool claims_devices = false;
  // Of the pod (template); the annotations may be the custom resource's. Views into the
  // metadata From() read, which outlives the request as the spec does.
  ViewMap labels;
  ViewMap annotations;
  PodRequirements needs;
  SchedulingConstraints constraints;
  // The admitted pod spec, for the stages that read more than needs/constraints (container
  // arguments, volumes, affinity). Always present from From(); what it views outlives the Plan
  // call.
  JsonView spec;

  // `metadata` may be absent (a template without metadata). `gpu_container` names a field of the
  // spec holding one more container (a CustomWorkload's), "" for none.
  static PodRequest From(std::string ns, std::string name, JsonView pod_spec,
                         JsonView metadata = {}, bool is_pod = false,
                         std::string_view gpu_container = {});

  // The value of the first of policy.InputKeys(key) present in the annotations, then in the
  // labels; nullopt when none is.
  std::optional<std::string> Input(const Policy& policy, std::string_view key) const;
  // The same, as the (key, value) entry found; nullptr when none.
  const ViewMap::value_type* InputEntry(const Policy& policy, std::string_view key) const;
  // The key the pod wrote `key` under (an alias, such as gpu-autoscaler.io/sharing, included),
  // else the policy's own annotation: the name messages about the input use.
  std::string InputName(const Policy& policy, std::string_view key) const;
  // Every input present, as (key without its prefix, entry), in the order InputEntry looks:
  // for a caller that asks for many keys (parallelism has 25 spellings), one pass instead.
  // The entries point into this request's maps.
  std::vector<std::pair<std::string_view, const ViewMap::value_type*>> Inputs(
      const Policy& policy) const;
};

// Replace resource `from` by `to` in every container's limits and requests.
struct ResourceSwap {
  std::string from;
  std::string to;
};

// Set `resource` to `count` in one container's limits (and in its requests when they name it).
struct CountChange {
  std::string container;  // the container's name
  std::string resource;
  int64_t count = 0;
};

struct PreferredTerm {
  int weight = 1;  // 1..100
  std::vector<NodeSelectorRequirement> requirements;
};

struct Decision {
  std::vector<CountChange> counts;  // applied before swaps
  std::vector<ResourceSwap> swaps;
  StringMap node_selector;  // entries to add to spec.nodeSelector
  // Requirements ANDed into every required node affinity term (a term is created if none).
  std::vector<NodeSelectorRequirement> required;
  std::vector<PreferredTerm> preferred;  // preferred node affinity terms to add
  std::vector<Toleration> tolerations;   // to add where missing
  std::string shm_size;                  // an in-memory /dev/shm volume of this size; "" none
  // Environment variables for every GPU container that sets none of that name (MPS settings).
  std::vector<std::pair<std::string, std::string>> env;
  // cpu and memory for every GPU container that sets none (worker defaults by GPU type).
  std::vector<ResourceDefault> resource_defaults;
  std::vector<std::pair<std::string, std::string>> annotations;  // key, value
  std::vector<std::string> warnings;  // one line each, for the AdmissionResponse
  std::vector<std::string> trail;     // why, step by step, for --explain and debug logs
  std::optional<std::string> deny;    // set when the policy says to refuse the pod
  std::vector<Claim> claims;          // the devices the decision counted on, to reserve
  DecisionCounts tally;               // what each stage did, for the decision metrics
  std::string node;                   // the node placement chose; "" when none
  std::string scheduling_gate;        // a gate to add to spec.schedulingGates; "" none

  bool Changes() const {
    return !counts.empty() || !swaps.empty() || !node_selector.empty() || !required.empty() ||
           !preferred.empty() || !tolerations.empty() || !shm_size.empty() || !env.empty() ||
           !resource_defaults.empty() || !annotations.empty() || !scheduling_gate.empty();
  }
};

// Everything a plan reads besides the pod.
struct PlanContext {
  const InventorySnapshot& snapshot;
  const Policy& policy;
  const ClusterGpuMetrics* metrics = nullptr;  // none: every allocatable GPU counts as idle
  const Reservations* reservations = nullptr;  // free counts are net of these ...
  std::string_view own_key;                    // ... except those held under this key
  // Explain every candidate node in the trail (review --explain, debug logs); off, the trail
  // says only what was chosen, so serving does no per-node string work.
  bool explain = false;
};

// What the stages so far decided, for the next ones to build on. The containers and the
// effective request start as the pod's own and are copied at a stage's first change to them (a
// count filled in, a swap): most pods plan without one, and their review then copies neither.
class PlanState {
 public:
  PlanState() = default;
  // Starts from (a copy of) the pod's `containers` and `effective` request.
  PlanState(std::vector<ContainerNeeds> containers, ResourceList effective)
      : containers_(std::move(containers)), effective_(std::move(effective)) {}

  // With the counts and swaps decided so far.
  const std::vector<ContainerNeeds>& containers() const { return containers_; }
  // The pod's effective request, likewise.
  const ResourceList& effective() const { return effective_; }

  // Sets container `index`'s count of `resource` (its limit, and its request when it names
  // one) and recomputes the effective request with the pod's `overhead`.
  void SetCount(size_t index, std::string_view resource, int64_t count,
                const ResourceList& overhead);
  // Replaces `from` by `to` in every container and recomputes the effective request.
  void Swap(const std::string& from, const std::string& to, const ResourceList& overhead);

  int64_t gpu_memory_mib = 0;  // GPU memory need per GPU; 0 when unknown
  SharingMode mode = SharingMode::kExclusive;
  bool opted_out = false;  // <prefix>/optimize: "false": only worker defaults apply
  // The queue gate holds the pod back (queue_gate.h): placement steers it nowhere and counts no
  // devices; the gate lifter pins the node when capacity frees.
  bool gated = false;

 private:
  void Recompute(const ResourceList& overhead);

  std::vector<ContainerNeeds> containers_;
  ResourceList effective_;
};

// Fills `claim` with `count` of `resource` on `node` and the node's free count of it (for
// nvidia.com/gpu.shared, within the policy's MPS clients per GPU): each stage that counts on
// devices adds its claims so, `CountOn(d.claims.emplace_back(), ...)`.
void CountOn(Claim& claim, const NodeInventory& node, std::string_view resource, int64_t count,
             const Policy& policy);

// The pod's constraints once `decision` so far is patched in: its nodeSelector entries and
// required terms narrow the nodes, its tolerations (worker defaults) widen them.
SchedulingConstraints AsPatched(const SchedulingConstraints& pod, const Decision& decision);

// Plans one pod spec: the stages in order. A pod whose GPU quantities cannot all be read
// is left unchanged (the apiserver rejects it anyway).
Decision Plan(const PodRequest& pod, const PlanContext& context);

// The seed-003 fallback alone, as before the stages existed (tests, benchmarks).
Decision Plan(const PodRequest& pod, const InventorySnapshot& snapshot, const Policy& policy,
              const Reservations* reservations = nullptr, std::string_view own_key = {});

// A node where `count` of `resource` are free net of reservations and that the pod may run on,
// most free first; nullptr when none. Only nodes whose product is in `products` count, when it
// is not empty.
const NodeInventory* FindFreeNode(const PodRequest& pod, const PlanContext& context,
                                  const std::string& resource, int64_t count,
                                  std::span<const std::string_view> products = {});

// As FindFreeNode, counting only the nodes `accept` admits (e.g. those whose GFD labels offer a
// sharing mode).
const NodeInventory* FindFreeNodeWhere(const PodRequest& pod, const PlanContext& context,
                                       const std::string& resource, int64_t count,
                                       const std::function<bool(const NodeInventory&)>& accept);

// As FindFreeNode, for the nodes `constraints` allow rather than the pod's own constraints (the
// decision so far patched in: AsPatched).
const NodeInventory* FindFreeNodeUnder(const SchedulingConstraints& constraints,
                                       const PodRequest& pod, const PlanContext& context,
                                       const std::string& resource, int64_t count);

}  // namespace gpuadmit
