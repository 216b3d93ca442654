#include "core/inventory/capacity_queue.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace gpuadmit {
namespace {

// The resource best fit and the hold are judged by: the first managed (GPU) resource of the
// ask, else its first resource.
std::string_view ScarceResource(const ResourceList& ask) {
  for (const auto& [resource, count] : ask) {
    if (count > 0 && IsManagedResource(resource)) return resource;
  }
  for (const auto& [resource, count] : ask) {
    if (count > 0) return resource;
  }
  return "";
}

bool Fits(const ResourceList& ask, const ResourceList& room) {
  return std::all_of(ask.begin(), ask.end(),
                     [&](const auto& entry) { return entry.second <= Get(room, entry.first); });
}

void Take(const ResourceList& ask, ResourceList& room) {
  for (const auto& [resource, count] : ask) {
    auto it = room.find(resource);
    if (it != room.end()) it->second = std::max<int64_t>(it->second - count, 0);
  }
}

}  // namespace

std::string_view LiftReasonName(LiftReason reason) {
  switch (reason) {
    case LiftReason::kCapacity:
      return "capacity";
    case LiftReason::kTimeout:
      return "timeout";
    case LiftReason::kUnplaceable:
      return "unplaceable";
    case LiftReason::kDisabled:
      return "disabled";
  }
  return "capacity";
}

bool CapacityQueue::Order::operator<(const Order& o) const {
  if (priority != o.priority) return priority > o.priority;
  return std::tie(arrived_at, key) < std::tie(o.arrived_at, o.key);
}

bool CapacityQueue::Add(QueuedPod pod) {
  if (by_key_.count(pod.key) > 0) return false;
  order_.insert({pod.priority, pod.arrived_at, pod.key});
  std::string key = pod.key;
  by_key_.emplace(std::move(key), std::move(pod));
  return true;
}

bool CapacityQueue::Remove(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return false;
  order_.erase({it->second.priority, it->second.arrived_at, it->second.key});
  by_key_.erase(it);
  return true;
}

double CapacityQueue::NextTimeout() const {
  double earliest = std::numeric_limits<double>::infinity();
  for (const auto& [key, pod] : by_key_) earliest = std::min(earliest, pod.arrived_at);
  return earliest + timeout_;
}

std::vector<LiftedPod> CapacityQueue::Lift(std::span<const NodeRoom> nodes, double now) {
  std::vector<ResourceList> room;
  room.reserve(nodes.size());
  for (const NodeRoom& n : nodes) room.push_back(n.free);
  // The most any node has free (and allocatable) of each resource: an ask above it fits nowhere
  // without a walk over the nodes. Taking room only lowers the true maximum, so the bound stays.
  ResourceList most_free;
  ResourceList most_allocatable;
  for (const NodeRoom& n : nodes) {
    for (const auto& [r, c] : n.free) most_free[r] = std::max(most_free[r], c);
    for (const auto& [r, c] : n.allocatable) most_allocatable[r] = std::max(most_allocatable[r], c);
  }
  std::vector<size_t> every(nodes.size());
  for (size_t i = 0; i < every.size(); ++i) every[i] = i;

  std::vector<LiftedPod> lifted;
  hold_.reset();
  for (const Order& o : order_) {
    QueuedPod& pod = by_key_.find(o.key)->second;
    double waited = now - pod.arrived_at;
    if (waited >= timeout_) {
      lifted.push_back({pod.key, LiftReason::kTimeout, 0, waited});
      continue;
    }
    const std::vector<size_t>& allowed = pod.nodes.empty() ? every : pod.nodes;
    std::string_view scarce = ScarceResource(pod.ask);
    std::optional<size_t> best;
    if (Fits(pod.ask, most_free)) {
      for (size_t n : allowed) {
        if (n >= room.size() || !Fits(pod.ask, room[n])) continue;
        if (!best || Get(room[n], scarce) < Get(room[*best], scarce)) best = n;
      }
    }
    if (best) {
      Take(pod.ask, room[*best]);
      lifted.push_back({pod.key, LiftReason::kCapacity, *best, waited});
      continue;
    }
    // Whether any allowed node could ever take the pod is asked once per pod (allocatable does
    // not change while it waits, or the timeout still releases it), and for the head the walk
    // also finds its hold.
    if (pod.placeable && hold_) continue;
    std::optional<size_t> closest;
    if (Fits(pod.ask, most_allocatable)) {
      for (size_t n : allowed) {
        if (n >= room.size() || !Fits(pod.ask, nodes[n].allocatable)) continue;
        if (!closest || Get(room[n], scarce) > Get(room[*closest], scarce)) closest = n;
      }
    }
    if (!closest) {
      lifted.push_back({pod.key, LiftReason::kUnplaceable, 0, waited});
      continue;
    }
    pod.placeable = true;
    if (!hold_) {
      hold_ = Hold{pod.key, *closest};
      Take(pod.ask, room[*closest]);
    }
  }
  for (const LiftedPod& l : lifted) Remove(l.key);
  return lifted;
}

}  // namespace gpuadmit
