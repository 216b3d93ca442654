#include "core/planner.h"

#include <algorithm>
#include <set>

#include "core/mig.h"

namespace gpuadmit {
namespace {

using ProductSet = std::set<std::string, std::less<>>;

// Finds nodes with free devices for one pod: net of reservations, on nodes it may run on.
struct Candidates {
  const InventorySnapshot& snapshot;
  const SchedulingConstraints& constraints;
  const Reservations* reservations;
  std::string_view own_key;

  // A node where `count` of `resource` are free, or nullptr. Only products in `products` (when
  // not empty) count. Nodes come most free first, so the walk stops at the first that has too
  // few even before reservations.
  const NodeInventory* FindFree(const std::string& resource, int64_t count,
                                const ProductSet& products) const {
    for (const NodeInventory* node : snapshot.NodesOffering(resource)) {
      int64_t free = node->Free(resource);
      if (free < count) break;
      if (!products.empty() && !products.contains(node->Product())) continue;
      if (reservations != nullptr) free -= reservations->Reserved(node->name(), resource, own_key);
      if (free >= count && CanRunOn(constraints, *node->facts)) return node;
    }
    return nullptr;
  }
};

// The GPU products whose nodes offer `resource`: fallback stays on the same kind of GPU.
ProductSet ProductsOffering(const InventorySnapshot& snapshot, const std::string& resource) {
  auto offering = snapshot.ProductsOffering(resource);
  return ProductSet(offering.begin(), offering.end());
}

// Smaller MIG profiles that nodes of `products` offer, largest first.
std::vector<MigProfile> SmallerProfiles(const InventorySnapshot& snapshot, const MigProfile& wanted,
                                        const ProductSet& products) {
  std::vector<MigProfile> smaller;
  for (std::string_view resource : snapshot.ResourcesOffered()) {
    auto p = ParseMigResource(resource);
    if (!p || !p->SmallerThan(wanted)) continue;
    auto nodes = snapshot.NodesOffering(resource);
    if (std::any_of(nodes.begin(), nodes.end(),
                    [&](const NodeInventory* n) { return products.contains(n->Product()); })) {
      smaller.push_back(*p);
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

Decision Plan(const PodRequest& pod, const InventorySnapshot& snapshot, const Policy& policy,
              const Reservations* reservations, std::string_view own_key) {
  Decision d;
  d.warnings = pod.needs.warnings;
  if (!policy.mig_fallback) return d;
  if (!pod.needs.warnings.empty()) {
    // Half a reading of the GPU ask is no basis for changing it; the apiserver rejects the
    // malformed quantities anyway.
    d.trail.push_back("GPU quantities unreadable: not planned");
    return d;
  }

  Candidates candidates{snapshot, pod.constraints, reservations, own_key};
  auto claim = [&](const NodeInventory& node, const std::string& resource, int64_t count) {
    d.claims.push_back({node.name(), resource, count, node.Free(resource)});
  };
  std::vector<ContainerNeeds> containers = pod.needs.containers;
  ResourceList effective = pod.needs.effective;
  std::string fallback_note;

  // Copy the keys: `effective` changes as swaps are made.
  std::vector<std::pair<std::string, int64_t>> asked(effective.begin(), effective.end());
  for (const auto& [resource, count] : asked) {
    auto wanted = ParseMigResource(resource);
    if (!wanted) continue;
    if (const NodeInventory* node = candidates.FindFree(resource, count, {})) {
      d.trail.push_back(resource + " x" + std::to_string(count) + ": free on " + node->name());
      claim(*node, resource, count);
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
                        node->name() + ", falling back");
      d.swaps.push_back({resource, to});
      claim(*node, to, Get(need, to));
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
