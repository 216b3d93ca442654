#include "core/inventory/queued_demand.h"

#include <algorithm>
#include <map>
#include <string>

namespace gpuadmit {
namespace {

// What is left of `resource` on `node` once used and queued demand are taken.
int64_t Left(const NodeInventory& node, const std::string& resource) {
  return Get(node.facts->allocatable, resource) - Get(node.used, resource) -
         Get(node.queued, resource);
}

// A pod built without QueuedFacts (tests, hand-made records): no constraints, no preference.
const QueuedFacts kNoFacts;

const QueuedFacts& FactsOf(const PodRecord& pod) { return pod.queued ? *pod.queued : kNoFacts; }

bool Takes(const NodeInventory& node, const PodRecord& pod) {
  if (!CanRunOn(FactsOf(pod).constraints, *node.facts)) return false;
  return std::all_of(pod.need.begin(), pod.need.end(),
                     [&](const auto& need) { return Left(node, need.first) >= need.second; });
}

void AddInto(ResourceList& into, const ResourceList& add) {
  for (const auto& [resource, count] : add) into[resource] += count;
}

class QueuedPlacer {
 public:
  explicit QueuedPlacer(std::vector<NodeInventory>& nodes) : nodes_(nodes) {}

  // The node `pod` counts on, or nullptr.
  NodeInventory* Place(const PodRecord& pod) {
    if (!pod.wanted_node.empty()) {
      NodeInventory* pinned = Find(pod.wanted_node);
      return pinned != nullptr && Takes(*pinned, pod) ? pinned : nullptr;
    }
    if (NodeInventory* preferred = Find(FactsOf(pod).preferred_node)) {
      if (Takes(*preferred, pod)) return preferred;
    }
    for (NodeInventory* node : Offering(pod.need.begin()->first)) {
      if (Takes(*node, pod)) return node;
    }
    return nullptr;
  }

 private:
  NodeInventory* Find(const std::string& name) {
    auto at = IndexOfNode(nodes_, name);
    return at ? &nodes_[*at] : nullptr;
  }

  // The nodes offering `resource`, most free before queued demand first, then by name. Built the
  // first time a queued pod needs it: most snapshots have few queued pods, or none.
  const std::vector<NodeInventory*>& Offering(const std::string& resource) {
    auto [it, added] = offering_.try_emplace(resource);
    if (!added) return it->second;
    std::vector<std::pair<int64_t, NodeInventory*>> keyed;
    for (NodeInventory& n : nodes_) {
      int64_t allocatable = Get(n.facts->allocatable, resource);
      if (allocatable > 0) keyed.emplace_back(-(allocatable - Get(n.used, resource)), &n);
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& entry : keyed) it->second.push_back(entry.second);
    return it->second;
  }

  std::vector<NodeInventory>& nodes_;
  std::map<std::string, std::vector<NodeInventory*>, std::less<>> offering_;
};

}  // namespace

ResourceList CountQueuedDemand(std::span<const PodRecord* const> queued,
                               std::vector<NodeInventory>& nodes) {
  ResourceList nowhere;
  QueuedPlacer placer(nodes);
  for (const PodRecord* pod : queued) {
    if (pod->need.empty()) continue;
    NodeInventory* node = FactsOf(*pod).unschedulable ? nullptr : placer.Place(*pod);
    AddInto(node != nullptr ? node->queued : nowhere, pod->need);
  }
  return nowhere;
}

}  // namespace gpuadmit
