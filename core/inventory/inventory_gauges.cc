#include "core/inventory/inventory_gauges.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/kube/mig_resource.h"

namespace gpuadmit {
namespace {

// Resources by node, for one lookup per node instead of a search per (node, resource).
using ReservedByNode = std::unordered_map<std::string_view, ResourceList>;

}  // namespace

InventoryGauges ComputeInventoryGauges(const InventorySnapshot& snapshot,
                                       const std::vector<Claim>& reserved, bool per_node) {
  ReservedByNode reserved_by_node;
  for (const Claim& c : reserved) {
    // Devices only: a required pin also reserves cpu and memory, which are no GPU gauge.
    if (IsManagedResource(c.resource)) reserved_by_node[c.node][c.resource] += c.count;
  }

  // The profiles some unplaceable pod asks for, and whether any MIG pod waits at all.
  bool mig_waiting = false;
  std::set<std::string, std::less<>> waiting_profiles;
  for (const auto& [resource, count] : snapshot.unplaceable()) {
    if (count <= 0) continue;
    if (auto p = ParseMigResource(resource)) {
      mig_waiting = true;
      waiting_profiles.insert(p->name);
    }
  }

  InventoryGauges out;
  static const ResourceList kNone;
  if (per_node) out.nodes.reserve(snapshot.nodes().size());
  for (const NodeInventory& n : snapshot.nodes()) {
    auto r = reserved_by_node.find(n.name());
    const ResourceList& node_reserved = r == reserved_by_node.end() ? kNone : r->second;
    NodeGauges* node_out = nullptr;
    if (per_node) {
      out.nodes.push_back({n.name(), {}, {}});
      node_out = &out.nodes.back();
    }
    auto add = [&](const std::string& resource) {
      ResourceGauges g;
      g.allocatable = Get(n.facts->allocatable, resource);
      g.used = Get(n.used, resource);
      g.queued = Get(n.queued, resource);
      g.reserved = Get(node_reserved, resource);
      g.free = std::max<int64_t>(0, g.allocatable - g.used - g.queued - g.reserved);
      g.dra = Get(n.facts->dra_allocatable, resource);
      ResourceGauges& sum = out.cluster[resource];
      sum.allocatable += g.allocatable;
      sum.used += g.used;
      sum.queued += g.queued;
      sum.reserved += g.reserved;
      sum.free += g.free;
      sum.dra += g.dra;
      int64_t stranded = 0;
      auto profile = ParseMigResource(resource);
      if (profile && mig_waiting && !waiting_profiles.contains(profile->name)) {
        stranded = g.free * profile->slices;
      }
      if (profile) out.stranded_slices[profile->name] += stranded;
      if (node_out != nullptr) {
        node_out->resources[resource] = g;
        if (profile) node_out->stranded_slices[profile->name] = stranded;
      }
    };
    // Each resource once: allocatable's, then any that only pods name (a node that lost a
    // profile its pods still hold).
    for (const auto& [resource, count] : n.facts->allocatable) add(resource);
    for (const ResourceList* list : {&n.used, &n.queued, &node_reserved}) {
      for (const auto& [resource, count] : *list) {
        if (n.facts->allocatable.contains(resource)) continue;
        if (list != &n.used && n.used.contains(resource)) continue;
        if (list == &node_reserved && n.queued.contains(resource)) continue;
        add(resource);
      }
    }
  }
  return out;
}

}  // namespace gpuadmit
