// InventorySnapshot: an immutable picture of the cluster's GPU nodes, what each can allocate and
// what the non-terminal pods bound to it already use. Built whole from Node and Pod objects,
// then shared read-only by every request (std::shared_ptr<const InventorySnapshot>).
//
//   auto snapshot = InventorySnapshot::FromObjects(list);  // `kubectl get nodes,pods -A -o json`
//   for (const NodeInventory& n : snapshot.value().nodes()) n.Free("nvidia.com/mig-1g.10gb");
//
// Thread safety: immutable after construction; safe to read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/requirements.h"
#include "core/result.h"
#include "core/scheduling.h"

namespace gpuadmit {

// GPU Feature Discovery's product label, e.g. "NVIDIA-H100-80GB-HBM3".
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";

struct NodeInventory {
  std::string name;
  std::map<std::string, std::string, std::less<>> labels;
  std::vector<Taint> taints;
  bool ready = false;
  bool unschedulable = false;
  ResourceList allocatable;  // managed resources only
  ResourceList used;         // effective requests of non-terminal pods bound here

  // Allocatable minus used, never below zero.
  int64_t Free(std::string_view resource) const;
  std::string_view Product() const;
};

class InventorySnapshot {
 public:
  // Builds a snapshot from a v1 List (or NodeList/PodList) whose items are Nodes and Pods.
  // Succeeded and Failed pods free their devices; unbound pods count as pending demand.
  // Errors when `list` has no `items` array.
  static Result<InventorySnapshot> FromObjects(const nlohmann::json& list);

  const std::vector<NodeInventory>& nodes() const { return nodes_; }
  const ResourceList& pending() const { return pending_; }
  size_t pod_count() const { return pod_count_; }

 private:
  std::vector<NodeInventory> nodes_;  // sorted by name
  ResourceList pending_;
  size_t pod_count_ = 0;
};

}  // namespace gpuadmit
