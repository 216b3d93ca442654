// "Could this pod run on that node?" for the parts of the scheduler's filter that gpuadmit
// mirrors: node readiness and cordons, nodeSelector, required node affinity (matchExpressions
// with In/NotIn/Exists/DoesNotExist/Gt/Lt, matchFields on metadata.name), and taints
// (NoSchedule, NoExecute) against tolerations.
//
//   SchedulingConstraints c = ReadSchedulingConstraints(pod_spec);
//   if (CanRunOn(c, *node.facts)) ...
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"

namespace gpuadmit {

// GPU Feature Discovery's label naming a node's GPU product ("NVIDIA-A100-SXM4-40GB").
inline constexpr std::string_view kProductLabel = "nvidia.com/gpu.product";

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct Toleration {
  std::string key;  // empty with Exists: every key
  std::string op = "Equal";
  std::string value;
  std::string effect;  // empty: every effect
  bool Tolerates(const Taint& taint) const;
  bool operator==(const Toleration&) const = default;
};

// One node selector requirement: a label (or, for a field, the node's name) against values.
struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool on_field = false;  // matchFields: key is "metadata.name"
};

// Terms are ORed; the requirements inside a term are ANDed (as the scheduler reads them).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> requirements;
};

struct SchedulingConstraints {
  std::map<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> required_terms;  // empty: no required node affinity
  std::vector<Toleration> tolerations;
  // Its GPUs are DRA claims': only a node with DRA devices (NodeFacts::dra_allocatable) can
  // meet them, as the scheduler's DynamicResources filter says.
  bool needs_dra_devices = false;
};

// A preferred node-affinity term: a node matching `term` gets `weight` (1..100) in the
// scheduler's NodeAffinity score.
struct WeightedTerm {
  int32_t weight = 0;
  NodeSelectorTerm term;
};

struct NodeFacts;

SchedulingConstraints ReadSchedulingConstraints(JsonView pod_spec);

// The GPU products the pod may run on by its nodeSelector or required node affinity (the
// kProductLabel values an In expression lists), sorted and without repeats; empty when it may
// run on any. Terms are ORed: one that does not name the label allows any product.
std::vector<std::string> GpuProductsOf(JsonView pod_spec);

// The pod's preferredDuringSchedulingIgnoredDuringExecution terms, in order. Empty preferences
// are left out: the API gives them an implicit weight of 0.
std::vector<WeightedTerm> ReadPreferredTerms(JsonView pod_spec);

// Whether `node` meets every requirement of `term`; an empty term matches no node.
bool TermMatches(const NodeSelectorTerm& term, const NodeFacts& node);

// The node a preferred node-affinity term of exactly one `kubernetes.io/hostname In [node]`
// expression names (the first such term), or "": what gpuadmit's placement writes, so a pod
// reviewed before, or queued after admission, says which node gpuadmit chose for it.
std::string PreferredHostname(JsonView pod_spec);

// True when the node is Ready, not cordoned, carries every nodeSelector label, matches one of
// the required affinity terms, and has no NoSchedule/NoExecute taint the pod does not tolerate.
bool CanRunOn(const SchedulingConstraints& constraints, const NodeFacts& node);

// Why CanRunOn refuses the node ("" when it does not), the first failing check in this order:
// "not ready", "cordoned", "nodeSelector KEY differs", "taint KEY[=VALUE]:EFFECT not tolerated",
// "required node affinity does not match". For trails and simulate's reasons; CanRunOn builds
// no strings on the request path.
std::string WhyCannotRunOn(const SchedulingConstraints& constraints, const NodeFacts& node);

}  // namespace gpuadmit
