#include "core/sim/pending_pods.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <vector>

namespace gpuadmit {
namespace {

int64_t FreeOn(const SimNode& node, std::string_view resource) {
  return Get(node.allocatable.extended, resource) - Get(node.requested.extended, resource);
}

// The first extended resource `pod` asks for, "" when none.
std::string_view FirstAsked(const SimPod& pod) {
  for (const auto& [resource, count] : pod.requests.extended) {
    if (count > 0) return resource;
  }
  return "";
}

}  // namespace

RoomIndex::RoomIndex(std::span<const SimNode> nodes) : none_(nodes.size()) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& [resource, allocatable] : nodes[i].allocatable.extended) {
      if (allocatable <= 0 || by_resource_.count(resource) > 0) continue;
      ByResource& r = by_resource_[resource];
      r.at_least.assign(kRoomCountCap + 1, NodeSet(nodes.size()));
      r.free.assign(nodes.size(), 0);
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) Update(i, nodes[i]);
}

void RoomIndex::Set(ByResource& r, size_t i, int64_t free) {
  free = std::clamp<int64_t>(free, 0, kRoomCountCap);
  int64_t was = r.free[i];
  for (int64_t k = std::min(was, free) + 1; k <= std::max(was, free); ++k) {
    r.at_least[k].Set(i, free >= k);
  }
  r.free[i] = free;
}

void RoomIndex::Update(size_t i, const SimNode& node) {
  for (auto& [resource, r] : by_resource_) Set(r, i, FreeOn(node, resource));
}

bool RoomIndex::MayFit(const SimPod& pod) const {
  for (const auto& [resource, count] : pod.requests.extended) {
    if (count <= 0) continue;
    auto it = by_resource_.find(resource);
    if (it == by_resource_.end() || it->second.at_least[std::min(count, kRoomCountCap)].empty()) {
      return false;
    }
  }
  return true;
}

const NodeSet* RoomIndex::WithRoomFor(const SimPod& pod) const {
  std::string_view resource = FirstAsked(pod);
  if (resource.empty()) return nullptr;
  auto it = by_resource_.find(resource);
  if (it == by_resource_.end()) return &none_;
  return &it->second.at_least[std::min(Get(pod.requests.extended, resource), kRoomCountCap)];
}

void PendingPods::Push(size_t index, const SimPod& pod) {
  std::string_view resource = FirstAsked(pod);
  GroupKey key{std::string(resource), resource.empty() ? 0 : Get(pod.requests.extended, resource)};
  groups_[key].push_back({next_order_++, index});
  ++size_;
}

void PendingPods::OfferTo(const SimNode& node, const std::function<bool(size_t)>& bind) {
  constexpr size_t kBound = std::numeric_limits<size_t>::max();
  struct Candidate {
    std::map<GroupKey, std::deque<Entry>>::iterator group;
    size_t next = 0;
    bool took = false;
  };
  std::vector<Candidate> candidates;
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    const GroupKey& key = it->first;
    if (key.second == 0 || FreeOn(node, key.first) >= key.second) candidates.push_back({it});
  }
  // The candidates' heads, earliest first: a merge of the groups in queue order.
  using Head = std::pair<uint64_t, size_t>;  // (order, candidate)
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  for (size_t c = 0; c < candidates.size(); ++c) {
    heads.push({candidates[c].group->second.front().order, c});
  }
  while (!heads.empty()) {
    size_t at = heads.top().second;
    heads.pop();
    Candidate& c = candidates[at];
    const auto& [resource, count] = c.group->first;
    std::deque<Entry>& queue = c.group->second;
    if (count > 0 && FreeOn(node, resource) < count) continue;  // full for this group now
    Entry& entry = queue[c.next++];
    if (bind(entry.index)) {
      entry.index = kBound;
      c.took = true;
      --size_;
    }
    if (c.next < queue.size()) heads.push({queue[c.next].order, at});
  }
  for (Candidate& c : candidates) {
    if (!c.took) continue;
    std::erase_if(c.group->second, [](const Entry& e) { return e.index == kBound; });
    if (c.group->second.empty()) groups_.erase(c.group);
  }
}

}  // namespace gpuadmit
