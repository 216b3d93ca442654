// SchedulerModel: kube-scheduler's default profile, as far as `gpuadmit simulate` needs it to
// decide where an admitted pod runs. Filters: NodeUnschedulable, NodeName, TaintToleration
// (NoSchedule, NoExecute), NodeAffinity (nodeSelector and required terms) and NodeResourcesFit
// (every requested resource, extended ones included, and the pod count). Scores, each 0-100 and
// weighted as upstream's default plugin set weighs them
// (pkg/scheduler/apis/config/v1/default_plugins.go): TaintToleration x3 (intolerable
// PreferNoSchedule taints, normalised in reverse), NodeAffinity x2 (the weights of the matching
// preferred terms, normalised to the best node), NodeResourcesFit x1 (LeastAllocated over cpu
// and memory with the scheduler's non-zero request defaults,
// pkg/scheduler/framework/plugins/noderesources/least_allocated.go) and
// NodeResourcesBalancedAllocation x1 (1 - the standard deviation of the cpu and memory
// fractions, noderesources/balanced_allocation.go). Not modelled, because every node would score
// the same for the pods simulate replays or because they need objects it does not have:
// PodTopologySpread, InterPodAffinity, ImageLocality, NodePorts, volumes, preemption. Among nodes
// with the best total the first in name order wins, where kube-scheduler picks one at random, so
// a run is reproducible.
//
//   std::vector<SimNode> nodes = ...;             // sorted by name
//   SimPod pod = SimPodFromSpec(spec);
//   std::optional<size_t> at = Schedule(pod, nodes);
//   if (at) Bind(pod, nodes[*at]);                // later Unbind(pod, nodes[*at])
//
// Thread safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/kube/kube_objects.h"
#include "core/kube/requirements.h"
#include "core/kube/scheduling.h"

namespace gpuadmit {

// 100: upstream's MaxNodeScore; 100m CPU and 200 MiB: the requests the scheduler's scoring
// assumes for a container that states none (pkg/scheduler/util/pod_resources.go).
inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kDefaultMilliCpuRequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = 200 * 1024 * 1024;

// Resources as NodeResourcesFit counts them. cpu, memory and pods are fields, not map entries:
// every pod is filtered and scored against every node, and three string lookups per node and
// plugin cost more than the rest of scheduling.
struct SimResources {
  int64_t cpu_milli = 0;  // thousandths of a CPU
  int64_t memory = 0;     // bytes
  int64_t pods = 0;       // a node's pod capacity (0: not stated, not checked), or pods bound
  ResourceList extended;  // nvidia.com/...
  bool operator==(const SimResources&) const = default;
};

struct SimNode {
  std::shared_ptr<const NodeFacts> facts;  // name, labels, taints, ready, cordoned
  SimResources allocatable;
  SimResources requested;         // by the pods bound here, and one pod each
  int64_t nonzero_cpu_milli = 0;  // requested, with the defaults for containers
  int64_t nonzero_memory = 0;     // that state none (LeastAllocated reads these)
};

struct SimPod {
  std::string node_name;  // spec.nodeName before scheduling: only that node passes
  SchedulingConstraints constraints;
  std::vector<WeightedTerm> preferred;
  SimResources requests;  // cpu, memory and extended, effective over the containers
  int64_t nonzero_cpu_milli = 0;
  int64_t nonzero_memory = 0;
};

// A v1 Node as the scheduler reads it: its facts and allocatable, nothing requested yet.
SimNode SimNodeOf(const nlohmann::json& node);

// A pod spec as the scheduler reads it: requests are the effective ones (the larger of the
// containers' sum and any init container's, plus overhead), limits standing in for absent
// requests of extended resources.
SimPod SimPodFromSpec(const nlohmann::json& pod_spec);

// Why `node` cannot take `pod` ("" when it can): "bound to another node" (NodeName), then
// WhyCannotRunOn's reasons (NodeUnschedulable, TaintToleration, NodeAffinity; the same checks
// gpuadmit's placement makes), then "insufficient pods" or "insufficient RESOURCE"
// (NodeResourcesFit).
std::string FilterReason(const SimPod& pod, const SimNode& node);

// FilterReason(pod, node).empty(), without building a reason: the path every Schedule takes.
bool Passes(const SimPod& pod, const SimNode& node);

// Each node's weighted total, for the nodes that pass the filters (-1 for the others).
std::vector<int64_t> ScoreNodes(const SimPod& pod, std::span<const SimNode> nodes);

// A set of node indices (into the nodes Schedule walks), as bits, with its size.
class NodeSet {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);
  NodeSet() = default;
  explicit NodeSet(size_t nodes) : words_((nodes + 63) / 64, 0) {}
  void Set(size_t i, bool member);
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // The first member at or after `from`, or npos.
  size_t NextFrom(size_t from) const;

 private:
  std::vector<uint64_t> words_;
  size_t size_ = 0;
};

// kube-scheduler's search for feasible nodes (pkg/scheduler/schedule_one.go,
// numFeasibleNodesToFind and findNodesThatPassFilters): it stops filtering once it has found
// NodesToFind feasible nodes, and the next pod's search starts where this one stopped, so
// successive pods see different parts of a large cluster.
struct SchedulerSearch {
  size_t next_start = 0;
  // percentageOfNodesToScore; 0: upstream's adaptive default, 50% less 1% per 125 nodes, at
  // least 5%.
  int percentage_of_nodes_to_score = 0;
};

// How many feasible nodes the search looks for among `all`: every node below 100, else
// `percentage` (0: adaptive) of them, at least 100.
size_t NodesToFind(size_t all, int percentage);

// The node the scheduler binds `pod` to, or nullopt when every filter rejects every node
// examined. With `search`, upstream's search (SchedulerSearch); without, every node is filtered.
// `among`, when given, holds every node that can pass (say those with room for what the pod
// asks): the others are skipped as if filtered and rejected, so the answer and the search are
// the same, for the cost of filtering the members alone.
std::optional<size_t> Schedule(const SimPod& pod, std::span<const SimNode> nodes,
                               SchedulerSearch* search = nullptr, const NodeSet* among = nullptr);

// Counts `pod`'s requests on `node` (Bind), or takes them away again (Unbind).
void Bind(const SimPod& pod, SimNode& node);
void Unbind(const SimPod& pod, SimNode& node);

}  // namespace gpuadmit
