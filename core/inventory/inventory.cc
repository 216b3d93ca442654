#include "core/inventory/inventory.h"

#include <algorithm>
#include <iterator>
#include <tuple>

#include "core/inventory/cluster_state.h"

namespace gpuadmit {

int64_t NodeInventory::Free(std::string_view resource) const {
  return std::max<int64_t>(
      0, Get(facts->allocatable, resource) - Get(used, resource) - Get(queued, resource));
}

ComputeRequest NodeInventory::ComputeFree() const {
  return {facts->compute.cpu_milli - compute_used.cpu_milli,
          facts->compute.memory_bytes - compute_used.memory_bytes};
}

bool NodeInventory::FitsCompute(const ComputeRequest& ask) const {
  return FitsIn(ask, ComputeFree(), facts->compute);
}

std::optional<size_t> IndexOfNode(std::span<const NodeInventory> nodes, std::string_view name) {
  auto it =
      std::lower_bound(nodes.begin(), nodes.end(), name,
                       [](const NodeInventory& n, std::string_view v) { return n.name() < v; });
  if (it == nodes.end() || it->name() != name) return std::nullopt;
  return static_cast<size_t>(it - nodes.begin());
}

const NodeInventory* InventorySnapshot::FindNode(std::string_view name) const {
  auto at = IndexOfNode(nodes_, name);
  return at ? &nodes_[*at] : nullptr;
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
  std::transform(by_resource_.begin(), by_resource_.end(), std::back_inserter(out),
                 [](const auto& entry) { return std::string_view(entry.first); });
  return out;
}

std::span<const std::string_view> InventorySnapshot::ProductsOffering(
    std::string_view resource) const {
  auto it = products_by_resource_.find(resource);
  if (it == products_by_resource_.end()) return {};
  return it->second;
}

std::span<const std::string_view> InventorySnapshot::AcceleratorsOffering(
    std::string_view resource) const {
  auto it = accelerators_by_resource_.find(resource);
  if (it == accelerators_by_resource_.end()) return {};
  return it->second;
}

size_t InventorySnapshot::GatedBy(std::string_view gate) const {
  auto it = gated_by_.find(gate);
  return it == gated_by_.end() ? 0 : it->second;
}

InventorySnapshot::InventorySnapshot(std::vector<NodeInventory> nodes, Totals totals)
    : nodes_(std::move(nodes)) {
  SetTotals(std::move(totals));
  BuildIndexes();
}

void InventorySnapshot::SetTotals(Totals totals) {
  queued_ = std::move(totals.queued);
  unplaceable_ = std::move(totals.unplaceable);
  gated_ = std::move(totals.gated);
  gated_by_.clear();
  for (const PodRecord& pod : gated_) {
    for (const std::string& gate : pod.queued->scheduling_gates) ++gated_by_[gate];
  }
  mix_ = std::move(totals.mix);
  device_classes_ = std::move(totals.device_classes);
  claim_templates_ = std::move(totals.claim_templates);
  dra_devices_ = std::move(totals.dra_devices);
  claim_pod_reservations_ = std::move(totals.claim_pod_reservations);
  pod_count_ = totals.pod_count;
  version_ = totals.version;
}

void InventorySnapshot::UpdateNodes(const NodeEdit& edit) {
  std::vector<const NodeInventory*> moved = edit(nodes_);
  std::sort(moved.begin(), moved.end());
  moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
  Reposition(moved);
}

void InventorySnapshot::BuildIndexes() {
  by_resource_.clear();
  products_by_resource_.clear();
  accelerators_by_resource_.clear();
  for (const NodeInventory& n : nodes_) {
    for (const auto& [resource, count] : n.facts->allocatable) {
      if (count > 0) by_resource_[resource].push_back(&n);
    }
  }
  // nodes_ is in name order, so a stable sort on free alone gives (most free, then name), and
  // each node's free count is read once, not twice per comparison.
  std::vector<std::pair<int64_t, const NodeInventory*>> keyed;
  for (auto& [resource, list] : by_resource_) {
    keyed.clear();
    std::transform(
        list.begin(), list.end(), std::back_inserter(keyed),
        [&r = resource](const NodeInventory* n) { return std::make_pair(-n->Free(r), n); });
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) list[i] = keyed[i].second;
    std::vector<std::string_view>& products = products_by_resource_[resource];
    std::transform(list.begin(), list.end(), std::back_inserter(products),
                   [](const NodeInventory* n) { return n->Product(); });
    std::sort(products.begin(), products.end());
    products.erase(std::unique(products.begin(), products.end()), products.end());
    std::vector<std::string_view> accelerators;
    for (const NodeInventory* n : list) {
      if (n->facts->labels.contains(kProductLabel)) continue;
      auto label = n->facts->labels.find(kAcceleratorLabel);
      if (label != n->facts->labels.end() && !label->second.empty()) {
        accelerators.push_back(label->second);
      }
    }
    if (accelerators.empty()) continue;
    std::sort(accelerators.begin(), accelerators.end());
    accelerators.erase(std::unique(accelerators.begin(), accelerators.end()), accelerators.end());
    accelerators_by_resource_[resource] = std::move(accelerators);
  }
}

void InventorySnapshot::Reposition(std::span<const NodeInventory* const> moved) {
  // `moved` is sorted: taking them all out first leaves each list sorted by current free counts,
  // so each goes back in by binary search. Ties keep name order, which is address order within
  // nodes_.
  auto is_moved = [&](const NodeInventory* n) {
    return std::binary_search(moved.begin(), moved.end(), n);
  };
  for (auto& [resource, list] : by_resource_) {
    size_t before = list.size();
    std::erase_if(list, is_moved);
    if (list.size() == before) continue;
    const std::string& r = resource;
    for (const NodeInventory* node : moved) {
      if (Get(node->facts->allocatable, r) <= 0) continue;
      const int64_t free = node->Free(r);
      auto at = std::lower_bound(list.begin(), list.end(), node,
                                 [&](const NodeInventory* a, const NodeInventory*) {
                                   int64_t fa = a->Free(r);
                                   return fa != free ? fa > free : a < node;
                                 });
      list.insert(at, node);
    }
  }
}

Result<InventorySnapshot> InventorySnapshot::FromObjects(const nlohmann::json& list,
                                                         std::string_view reservation_annotation) {
  auto items = list.find("items");
  if (!list.is_object() || items == list.end() || !items->is_array()) {
    return Error{"the cluster list has no \"items\" array"};
  }
  ClusterState state{std::string(reservation_annotation)};
  for (const nlohmann::json& item : *items) {
    auto kind = item.find("kind");
    if (kind == item.end() || !kind->is_string()) continue;
    if (*kind == "Node") state.UpsertNode(ReadNode(item));
    if (*kind == "Pod") state.UpsertPod(ReadPod(item, state.reservation_annotation()));
    if (*kind == "ResourceClaim") state.UpsertClaim(ReadResourceClaim(item));
    if (*kind == "ResourceSlice") {
      state.EditDra([&](DraDevices& d) { d.UpsertSlice(ReadResourceSlice(item)); });
    }
    if (*kind == "DeviceClass") {
      state.EditDra([&](DraDevices& d) { d.UpsertClass(ReadDeviceClass(item)); });
    }
    if (*kind == "ResourceClaimTemplate") {
      state.EditDra([&](DraDevices& d) { d.UpsertTemplate(ReadClaimTemplate(item)); });
    }
  }
  return state.Snapshot(1);
}

const std::map<std::string, NodeDevices, std::less<>>& InventorySnapshot::dra_devices() const {
  static const std::map<std::string, NodeDevices, std::less<>> kNone;
  return dra_devices_ ? *dra_devices_ : kNone;
}

std::string_view InventorySnapshot::ReservationOfClaimPod(std::string_view pod) const {
  auto it = claim_pod_reservations_.find(pod);
  return it == claim_pod_reservations_.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace gpuadmit
