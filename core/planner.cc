#include "core/planner.h"

#include <algorithm>
#include <set>

#include "core/mig.h"

namespace gpuadmit {
namespace {

// The nodes a pod could use for a resource: those it may run on that offer the resource at all.
struct Candidates {
  const InventorySnapshot& snapshot;
  const SchedulingConstraints& constraints;

  // A node where `count` of `resource` are free, or nullptr. Only products in `products` (when
  // not empty) count.
  const NodeInventory* FindFree(const std::string& resource, int64_t count,
                                const std::set<std::string, std::less<>>& products) const {
    for (const NodeInventory& node : snapshot.nodes()) {
      if (node.Free(resource) < count) continue;
      if (!products.empty() && !products.contains(node.Product())) continue;
      if (CanRunOn(constraints, node)) return &node;
    }
    return nullptr;
  }
};

// The GPU products whose nodes offer `resource`: fallback stays on the same kind of GPU.
std::set<std::string, std::less<>> ProductsOffering(const InventorySnapshot& snapshot,
                                                    const std::string& resource) {
  std::set<std::string, std::less<>> products;
  for (const NodeInventory& node : snapshot.nodes()) {
    if (Get(node.allocatable, resource) > 0) products.emplace(node.Product());
  }
  return products;
}

// Smaller MIG profiles that nodes of `products` offer, largest first.
std::vector<MigProfile> SmallerProfiles(const InventorySnapshot& snapshot, const MigProfile& wanted,
                                        const std::set<std::string, std::less<>>& products) {
  std::vector<MigProfile> smaller;
  for (const NodeInventory& node : snapshot.nodes()) {
    if (!products.contains(node.Product())) continue;
    for (const auto& [resource, count] : node.allocatable) {
      auto p = ParseMigResource(resource);
      if (!p || count <= 0 || !p->SmallerThan(wanted)) continue;
      bool seen = std::any_of(smaller.begin(), smaller.end(),
                              [&](const MigProfile& q) { return q.name == p->name; });
      if (!seen) smaller.push_back(*p);
    }
  }
  std::sort(smaller.begin(), smaller.end(),
            [](const MigProfile& a, const MigProfile& b) { return b.SmallerThan(a); });
  return smaller;
}

std::vector<ContainerNeeds> Swapped(std::vector<ContainerNeeds> containers, const std::string& from,
                                    const std::string& to) {
  auto move_key = [&](ResourceList& list) {
    auto it = list.find(from);
    if (it == list.end()) return;
    list[to] += it->second;
    list.erase(from);
  };
  for (ContainerNeeds& c : containers) {
    move_key(c.limits);
    move_key(c.requests);
  }
  return containers;
}

}  // namespace

PodRequest PodRequest::From(std::string ns, std::string name, const nlohmann::json& pod_spec) {
  return {std::move(ns), std::move(name), ReadPodRequirements(pod_spec),
          ReadSchedulingConstraints(pod_spec)};
}

Decision Plan(const PodRequest& pod, const InventorySnapshot& snapshot, const Policy& policy) {
  Decision d;
  d.warnings = pod.needs.warnings;
  if (!policy.mig_fallback) return d;
  if (!pod.needs.warnings.empty()) {
    // Half a reading of the GPU ask is no basis for changing it; the apiserver rejects the
    // malformed quantities anyway.
    d.trail.push_back("GPU quantities unreadable: not planned");
    return d;
  }

  Candidates candidates{snapshot, pod.constraints};
  std::vector<ContainerNeeds> containers = pod.needs.containers;
  ResourceList effective = pod.needs.effective;
  std::string fallback_note;

  // Copy the keys: `effective` changes as swaps are made.
  std::vector<std::pair<std::string, int64_t>> asked(effective.begin(), effective.end());
  for (const auto& [resource, count] : asked) {
    auto wanted = ParseMigResource(resource);
    if (!wanted) continue;
    if (const NodeInventory* node = candidates.FindFree(resource, count, {})) {
      d.trail.push_back(resource + " x" + std::to_string(count) + ": free on " + node->name);
      continue;
    }
    auto products = ProductsOffering(snapshot, resource);
    if (products.empty()) {
      d.warnings.push_back(resource + " is offered by no node; " + pod.name + " left unchanged");
      d.trail.push_back(resource + ": no node offers it");
      continue;
    }
    d.trail.push_back(resource + " x" + std::to_string(count) +
                      ": free on no node this pod may use");
    bool placed = false;
    for (const MigProfile& smaller : SmallerProfiles(snapshot, *wanted, products)) {
      std::string to = MigResourceName(smaller);
      auto swapped = Swapped(containers, resource, to);
      ResourceList need = EffectiveRequest(swapped, pod.needs.overhead);
      const NodeInventory* node = candidates.FindFree(to, Get(need, to), products);
      if (node == nullptr) {
        d.trail.push_back("  " + to + " x" + std::to_string(Get(need, to)) + ": not free either");
        continue;
      }
      d.trail.push_back("  " + to + " x" + std::to_string(Get(need, to)) + ": free on " +
                        node->name + ", falling back");
      d.swaps.push_back({resource, to});
      if (!fallback_note.empty()) fallback_note += ",";
      fallback_note += wanted->name + "->" + smaller.name;
      containers = std::move(swapped);
      placed = true;
      break;
    }
    if (!placed) {
      std::string why = resource + " is free on no node " + pod.name +
                        " may use, and no smaller MIG profile is either";
      if (policy.on_exhausted == ExhaustedAction::kDeny) {
        d.deny = why;
        return d;
      }
      d.warnings.push_back(why + "; left unchanged");
    }
  }
  if (!fallback_note.empty()) {
    d.annotations.emplace_back(policy.Annotation("fallback"), fallback_note);
    d.warnings.push_back("gpuadmit: " + pod.name + " falls back " + fallback_note +
                         " (requested MIG profile free on no node)");
  }
  return d;
}

}  // namespace gpuadmit
