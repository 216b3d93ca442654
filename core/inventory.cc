#include "core/inventory.h"

#include <algorithm>
#include <tuple>

#include "core/cluster_state.h"

namespace gpuadmit {

int64_t NodeInventory::Free(std::string_view resource) const {
  return std::max<int64_t>(0, Get(facts->allocatable, resource) - Get(used, resource));
}

const NodeInventory* InventorySnapshot::FindNode(std::string_view name) const {
  auto it =
      std::lower_bound(nodes_.begin(), nodes_.end(), name,
                       [](const NodeInventory& n, std::string_view v) { return n.name() < v; });
  return it != nodes_.end() && it->name() == name ? &*it : nullptr;
}

std::span<const NodeInventory* const> InventorySnapshot::NodesOffering(
    std::string_view resource) const {
  auto it = by_resource_.find(resource);
  if (it == by_resource_.end()) return {};
  return it->second;
}

std::vector<std::string_view> InventorySnapshot::ResourcesOffered() const {
  std::vector<std::string_view> out;
  out.reserve(by_resource_.size());
  for (const auto& entry : by_resource_) out.push_back(entry.first);
  return out;
}

void InventorySnapshot::BuildIndexes() {
  by_resource_.clear();
  for (const NodeInventory& n : nodes_) {
    for (const auto& [resource, count] : n.facts->allocatable) {
      if (count > 0) by_resource_[resource].push_back(&n);
    }
  }
  for (auto& [resource, list] : by_resource_) {
    std::sort(list.begin(), list.end(),
              [&r = resource](const NodeInventory* a, const NodeInventory* b) {
                return std::make_tuple(-a->Free(r), std::string_view(a->name())) <
                       std::make_tuple(-b->Free(r), std::string_view(b->name()));
              });
  }
}

Result<InventorySnapshot> InventorySnapshot::FromObjects(const nlohmann::json& list) {
  auto items = list.find("items");
  if (!list.is_object() || items == list.end() || !items->is_array()) {
    return Error{"the cluster list has no \"items\" array"};
  }
  ClusterState state("gpuadmit.io/reservation");
  for (const nlohmann::json& item : *items) {
    auto kind = item.find("kind");
    if (kind == item.end() || !kind->is_string()) continue;
    if (*kind == "Node") state.UpsertNode(ReadNode(item));
    if (*kind == "Pod") state.UpsertPod(ReadPod(item, state.reservation_annotation()));
  }
  return state.Snapshot(1);
}

}  // namespace gpuadmit
