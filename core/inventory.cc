#include "core/inventory.h"

#include <algorithm>
#include <unordered_map>

#include "core/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

const json& Field(const json& object, std::string_view key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string Str(const json& value) { return value.is_string() ? value.get<std::string>() : ""; }

NodeInventory ReadNode(const json& node) {
  NodeInventory n;
  const json& metadata = Field(node, "metadata");
  n.name = Str(Field(metadata, "name"));
  if (const json& labels = Field(metadata, "labels"); labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (v.is_string()) n.labels.emplace(k, v.get<std::string>());
    }
  }
  const json& spec = Field(node, "spec");
  n.unschedulable = Field(spec, "unschedulable").is_boolean() && Field(spec, "unschedulable");
  if (const json& taints = Field(spec, "taints"); taints.is_array()) {
    for (const json& t : taints) {
      n.taints.push_back({Str(Field(t, "key")), Str(Field(t, "value")), Str(Field(t, "effect"))});
    }
  }
  const json& status = Field(node, "status");
  if (const json& allocatable = Field(status, "allocatable"); allocatable.is_object()) {
    for (const auto& [resource, quantity] : allocatable.items()) {
      if (!IsManagedResource(resource) || !quantity.is_string()) continue;
      if (auto count = ParseWholeQuantity(quantity.get_ref<const std::string&>()); count.ok()) {
        n.allocatable[resource] = count.value();
      }
    }
  }
  if (const json& conditions = Field(status, "conditions"); conditions.is_array()) {
    for (const json& c : conditions) {
      if (Str(Field(c, "type")) == "Ready") n.ready = Str(Field(c, "status")) == "True";
    }
  }
  return n;
}

bool IsTerminal(const json& pod) {
  std::string phase = Str(Field(Field(pod, "status"), "phase"));
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

int64_t NodeInventory::Free(std::string_view resource) const {
  return std::max<int64_t>(0, Get(allocatable, resource) - Get(used, resource));
}

std::string_view NodeInventory::Product() const {
  auto it = labels.find(kGpuProductLabel);
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

Result<InventorySnapshot> InventorySnapshot::FromObjects(const json& list) {
  const json& items = Field(list, "items");
  if (!items.is_array()) return Error{"the cluster list has no \"items\" array"};

  InventorySnapshot s;
  for (const json& item : items) {
    if (Str(Field(item, "kind")) == "Node") s.nodes_.push_back(ReadNode(item));
  }
  std::sort(s.nodes_.begin(), s.nodes_.end(),
            [](const NodeInventory& a, const NodeInventory& b) { return a.name < b.name; });
  std::unordered_map<std::string_view, NodeInventory*> by_name;
  for (NodeInventory& n : s.nodes_) by_name.emplace(n.name, &n);

  for (const json& item : items) {
    if (Str(Field(item, "kind")) != "Pod") continue;
    ++s.pod_count_;
    if (IsTerminal(item)) continue;
    const json& spec = Field(item, "spec");
    ResourceList need = ReadPodRequirements(spec).effective;
    if (need.empty()) continue;
    std::string node_name = Str(Field(spec, "nodeName"));
    ResourceList* into = &s.pending_;
    if (!node_name.empty()) {
      auto it = by_name.find(node_name);
      if (it == by_name.end())
        continue;  // bound to a node we do not know: it uses nothing we count
      into = &it->second->used;
    }
    for (const auto& [resource, count] : need) (*into)[resource] += count;
  }
  return s;
}

}  // namespace gpuadmit
