#include "core/plan/planner.h"

#include <algorithm>

#include "core/plan/estimation.h"
#include "core/plan/mig_fallback.h"
#include "core/plan/mps_clients.h"
#include "core/plan/placement.h"
#include "core/plan/queue_gate.h"
#include "core/plan/sharing.h"

namespace gpuadmit {
namespace {

ViewMap StringsOf(JsonView metadata, const char* field) {
  ViewMap out;
  std::vector<JsonView::Member> members = metadata[field].Members();
  out.reserve(members.size());
  for (const auto& [k, v] : members) {
    if (v.is_string()) out.Append(k, v.string());  // Members() come in key order
  }
  return out;
}

// Calls visit(key without its prefix, entry) for each input of `pod`, in the order inputs are
// looked up: annotations, then labels; in each, the policy's prefix before the
// gpu-autoscaler.io alias. Stops when visit returns true. The maps are ordered, so the keys
// under a prefix are one run from lower_bound(prefix): nothing is built to find them.
template <typename Visit>
void VisitInputs(const PodRequest& pod, const Policy& policy, Visit&& visit) {
  auto run = [&visit](const ViewMap& map, std::string_view prefix) {
    for (auto it = map.lower_bound(prefix); it != map.end(); ++it) {
      std::string_view k = it->first;
      if (!k.starts_with(prefix)) break;
      if (k.size() > prefix.size() + 1 && k[prefix.size()] == '/' &&
          visit(k.substr(prefix.size() + 1), &*it)) {
        return true;
      }
    }
    return false;
  };
  constexpr std::string_view kAlias = "gpu-autoscaler.io";  // its keys are read as aliases
  for (const ViewMap* map : {&pod.annotations, &pod.labels}) {
    if (run(*map, policy.annotation_prefix)) return;
    if (policy.annotation_prefix != kAlias && run(*map, kAlias)) return;
  }
}

}  // namespace

PodRequest PodRequest::From(std::string ns, std::string name, JsonView pod_spec, JsonView metadata,
                            bool is_pod, std::string_view gpu_container) {
  return PodRequest{.ns = std::move(ns),
                    .name = std::move(name),
                    .is_pod = is_pod,
                    .labels = StringsOf(metadata, "labels"),
                    .annotations = StringsOf(metadata, "annotations"),
                    .needs = ReadPodRequirements(pod_spec, gpu_container),
                    .constraints = ReadSchedulingConstraints(pod_spec),
                    .spec = pod_spec};
}

const ViewMap::value_type* PodRequest::InputEntry(const Policy& policy,
                                                  std::string_view key) const {
  const ViewMap::value_type* found = nullptr;
  VisitInputs(*this, policy, [&](std::string_view input, const ViewMap::value_type* entry) {
    if (input != key) return false;
    found = entry;  // the first in lookup order
    return true;
  });
  return found;
}

std::vector<std::pair<std::string_view, const ViewMap::value_type*>> PodRequest::Inputs(
    const Policy& policy) const {
  std::vector<std::pair<std::string_view, const ViewMap::value_type*>> inputs;
  VisitInputs(*this, policy, [&inputs](std::string_view input, const ViewMap::value_type* entry) {
    inputs.emplace_back(input, entry);
    return false;
  });
  return inputs;
}

std::optional<std::string> PodRequest::Input(const Policy& policy, std::string_view key) const {
  const ViewMap::value_type* entry = InputEntry(policy, key);
  if (entry == nullptr) return std::nullopt;
  return std::string(entry->second);
}

std::string PodRequest::InputName(const Policy& policy, std::string_view key) const {
  const ViewMap::value_type* entry = InputEntry(policy, key);
  return entry != nullptr ? std::string(entry->first) : policy.Annotation(key);
}

void PlanState::SetCount(size_t index, std::string_view resource, int64_t count,
                         const ResourceList& overhead) {
  ContainerNeeds& c = containers_[index];
  c.limits[resource] = count;
  if (c.requests.contains(resource)) c.requests[resource] = count;
  Recompute(overhead);
}

void PlanState::Recompute(const ResourceList& overhead) {
  effective_ = EffectiveRequest(containers_, overhead);
}

void PlanState::Swap(const std::string& from, const std::string& to, const ResourceList& overhead) {
  auto move_key = [&](ResourceList& list) {
    auto it = list.find(from);
    if (it == list.end()) return;
    int64_t n = it->second;
    list.erase(it);
    list[to] += n;
  };
  for (ContainerNeeds& c : containers_) {
    move_key(c.limits);
    move_key(c.requests);
  }
  Recompute(overhead);
}

void CountOn(Claim& claim, const NodeInventory& node, std::string_view resource, int64_t count,
             const Policy& policy) {
  claim.node.assign(node.name());
  claim.resource.assign(resource);
  claim.count = count;
  claim.free = node.Free(resource) - MpsClientExcess(node, resource, policy.sharing);
}

SchedulingConstraints AsPatched(const SchedulingConstraints& pod, const Decision& d) {
  SchedulingConstraints c = pod;
  for (const auto& [key, value] : d.node_selector) c.node_selector[key] = value;
  if (!d.required.empty() && c.required_terms.empty()) {
    c.required_terms.push_back({d.required});
  } else if (!d.required.empty()) {
    for (NodeSelectorTerm& term : c.required_terms) {
      if (term.requirements.empty()) continue;  // matches no node, patched or not
      term.requirements.insert(term.requirements.end(), d.required.begin(), d.required.end());
    }
  }
  c.tolerations.insert(c.tolerations.end(), d.tolerations.begin(), d.tolerations.end());
  return c;
}

namespace {

// The walk behind FindFreeNode and its variants: the nodes offering `resource`, most free first,
// the first that `accept` admits with `count` free net of reservations (and of MPS clients past
// the policy's cap), room for the pod's cpu and memory, and that `constraints` allow.
template <typename Accept>
const NodeInventory* FirstFreeNode(const SchedulingConstraints& constraints, const PodRequest& pod,
                                   const PlanContext& context, const std::string& resource,
                                   int64_t count, Accept accept) {
  for (const NodeInventory* node : context.snapshot.NodesOffering(resource)) {
    int64_t free = node->Free(resource);
    if (free < count) break;  // most free first: none further has enough, even before reservations
    if (!accept(*node)) continue;
    free -= MpsClientExcess(*node, resource, context.policy.sharing);
    if (context.reservations != nullptr) {
      free -= context.reservations->Reserved(node->name(), resource, context.own_key);
    }
    if (free >= count && node->FitsCompute(pod.needs.compute) &&
        CanRunOn(constraints, *node->facts)) {
      return node;
    }
  }
  return nullptr;
}

}  // namespace

const NodeInventory* FindFreeNode(const PodRequest& pod, const PlanContext& context,
                                  const std::string& resource, int64_t count,
                                  std::span<const std::string_view> products) {
  return FirstFreeNode(
      pod.constraints, pod, context, resource, count, [&](const NodeInventory& node) {
        return products.empty() ||
               std::find(products.begin(), products.end(), node.Product()) != products.end();
      });
}

const NodeInventory* FindFreeNodeWhere(const PodRequest& pod, const PlanContext& context,
                                       const std::string& resource, int64_t count,
                                       const std::function<bool(const NodeInventory&)>& accept) {
  return FirstFreeNode(pod.constraints, pod, context, resource, count, accept);
}

const NodeInventory* FindFreeNodeUnder(const SchedulingConstraints& constraints,
                                       const PodRequest& pod, const PlanContext& context,
                                       const std::string& resource, int64_t count) {
  return FirstFreeNode(constraints, pod, context, resource, count,
                       [](const NodeInventory&) { return true; });
}

Decision Plan(const PodRequest& pod, const PlanContext& context) {
  Decision d;
  if (!pod.needs.warnings.empty()) {
    d.warnings = pod.needs.warnings;
    // Half a reading of the GPU ask is no basis for changing it; the apiserver rejects the
    // malformed quantities anyway.
    d.trail.push_back("GPU quantities unreadable: not planned");
    return d;
  }
  PlanState state{pod.needs.containers, pod.needs.effective};
  if (!pod.claims_devices) {
    PlanRequirements(pod, context, state, d);
    if (d.deny) return d;
    PlanSharing(pod, context, state, d);
    if (d.deny) return d;
  }
  PlanMigFallback(pod, context, state, d);
  if (d.deny) return d;
  PlanQueueGate(pod, context, state, d);
  PlanPlacement(pod, context, state, d);
  return d;
}

Decision Plan(const PodRequest& pod, const InventorySnapshot& snapshot, const Policy& policy,
              const Reservations* reservations, std::string_view own_key) {
  return Plan(pod, PlanContext{snapshot, policy, nullptr, reservations, own_key});
}

}  // namespace gpuadmit
