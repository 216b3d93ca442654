#include "core/mig_fallback.h"

#include <algorithm>

#include "core/mig.h"

namespace gpuadmit {
namespace {

// Smaller MIG profiles that nodes of `products` offer, largest first.
std::vector<MigProfile> SmallerProfiles(const InventorySnapshot& snapshot, const MigProfile& wanted,
                                        std::span<const std::string_view> products) {
  std::vector<MigProfile> smaller;
  for (std::string_view resource : snapshot.ResourcesOffered()) {
    auto p = ParseMigResource(resource);
    if (!p || !p->SmallerThan(wanted)) continue;
    auto nodes = snapshot.NodesOffering(resource);
    if (std::any_of(nodes.begin(), nodes.end(), [&](const NodeInventory* n) {
          return std::find(products.begin(), products.end(), n->Product()) != products.end();
        })) {
      smaller.push_back(*p);
    }
  }
  std::sort(smaller.begin(), smaller.end(),
            [](const MigProfile& a, const MigProfile& b) { return b.SmallerThan(a); });
  return smaller;
}

}  // namespace

void PlanMigFallback(const PodRequest& pod, const PlanContext& context, PlanState& state,
                     Decision& d) {
  const Policy& policy = context.policy;
  if (!policy.mig.fallback || state.opted_out) return;
  auto claim = [&](const NodeInventory& node, const std::string& resource, int64_t count) {
    d.claims.push_back({node.name(), resource, count, node.Free(resource)});
  };
  std::string fallback_note;

  // Copy the keys: `state.effective` changes as swaps are made.
  std::vector<std::pair<std::string, int64_t>> asked(state.effective.begin(),
                                                     state.effective.end());
  for (const auto& [resource, count] : asked) {
    auto wanted = ParseMigResource(resource);
    if (!wanted) continue;
    if (const NodeInventory* node = FindFreeNode(pod, context, resource, count)) {
      d.trail.push_back(resource + " x" + std::to_string(count) + ": free on " + node->name());
      claim(*node, resource, count);
      continue;
    }
    auto products = context.snapshot.ProductsOffering(resource);
    if (products.empty()) {
      d.warnings.push_back(resource + " is offered by no node; " + pod.name + " left unchanged");
      d.trail.push_back(resource + ": no node offers it");
      continue;
    }
    d.trail.push_back(resource + " x" + std::to_string(count) +
                      ": free on no node this pod may use");
    bool placed = false;
    for (const MigProfile& smaller : SmallerProfiles(context.snapshot, *wanted, products)) {
      std::string to = MigResourceName(smaller);
      PlanState swapped = state;
      swapped.Swap(resource, to, pod.needs.overhead);
      int64_t need = Get(swapped.effective, to);
      const NodeInventory* node = FindFreeNode(pod, context, to, need, products);
      if (node == nullptr) {
        d.trail.push_back("  " + to + " x" + std::to_string(need) + ": not free either");
        continue;
      }
      d.trail.push_back("  " + to + " x" + std::to_string(need) + ": free on " + node->name() +
                        ", falling back");
      d.swaps.push_back({resource, to});
      claim(*node, to, need);
      if (!fallback_note.empty()) fallback_note += ",";
      fallback_note += wanted->name + "->" + smaller.name;
      state = std::move(swapped);
      placed = true;
      break;
    }
    if (!placed) {
      std::string why = resource + " is free on no node " + pod.name +
                        " may use, and no smaller MIG profile is either";
      if (policy.mig.on_exhausted == ExhaustedAction::kDeny) {
        d.deny = why;
        return;
      }
      d.warnings.push_back(why + "; left unchanged");
    }
  }
  if (!fallback_note.empty()) {
    d.annotations.emplace_back(policy.Annotation("fallback"), fallback_note);
    d.warnings.push_back("gpuadmit: " + pod.name + " falls back " + fallback_note +
                         " (requested MIG profile free on no node)");
  }
}

}  // namespace gpuadmit
