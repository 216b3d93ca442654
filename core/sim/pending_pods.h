// The replay's view of where room is, so that a queue of pods the scheduler cannot place costs
// what a live cluster's would, not a filter of every node for every pod at every change:
//   RoomIndex    for each extended resource and count k, the set of nodes with at least k free.
//                A pod that no node has room for is known unschedulable without filtering any
//                node (every node would be filtered and rejected, which moves no search start:
//                the answer and the scheduler's state are the same), and Schedule filters only
//                the nodes with room for the pod's first resource (the others would fail
//                NodeResourcesFit where the walk met them).
//   PendingPods  the pods the scheduler model could not place, in the order they failed, kept
//                in groups by the first extended resource they ask and its count, so a node that
//                frees room is offered, in that order, only the pods of groups it has room for.
//                A pod of another group would fail that node's NodeResourcesFit, and offering
//                pods only takes room away, so the pods offered and the order they are offered
//                in are those of a scan of the whole queue.
//
//   RoomIndex room(nodes);
//   if (room.MayFit(pod)) at = Schedule(pod, nodes, &search, room.WithRoomFor(pod));
//   Bind(pod, nodes[i]); room.Update(i, nodes[i]);
//   PendingPods pending;  pending.Push(i, pod);
//   pending.OfferTo(node, [&](size_t i) { return TryBindHere(i); });
//
// Thread safety: none; each replay owns its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/sim/scheduler_model.h"

namespace gpuadmit {

// 64: the largest count a node's free is told apart at; above it only "64 or more" is known,
// which only widens the sets (a GPU node offers 8 to 16 devices, a shared one 8 x its
// replicas).
inline constexpr int64_t kRoomCountCap = 64;

class RoomIndex {
 public:
  // Indexes every node of `nodes`, which keep their allocatable from then on.
  explicit RoomIndex(std::span<const SimNode> nodes);
  // Node `i`'s requests changed (Bind, Unbind): its free counts are read again.
  void Update(size_t i, const SimNode& node);
  // False when, for some extended resource `pod` asks, no node has that many free: then no node
  // passes NodeResourcesFit. True says nothing more than "maybe".
  bool MayFit(const SimPod& pod) const;
  // The nodes with at least as many free as `pod` asks of its first extended resource (a
  // superset above kRoomCountCap); nullptr when it asks none, and every node may take it.
  const NodeSet* WithRoomFor(const SimPod& pod) const;

 private:
  struct ByResource {
    std::vector<NodeSet> at_least;  // [k]: nodes with min(free, cap) >= k, k = 1..cap
    std::vector<int64_t> free;      // per node, clamped to [0, cap]
  };
  void Set(ByResource& r, size_t i, int64_t free);
  std::map<std::string, ByResource, std::less<>> by_resource_;
  NodeSet none_;  // the nodes offering a resource no node offers
};

class PendingPods {
 public:
  // Appends pod `index` (the caller's), which asks `pod`'s requests, to the end of the queue.
  void Push(size_t index, const SimPod& pod);
  // Offers `node` the queued pods, in queue order, whose group it still has room for: `bind`
  // is called with each and returns true when it bound the pod there (it must update `node`),
  // which leaves the queue. A group is left once `node` has too few of its resource free.
  void OfferTo(const SimNode& node, const std::function<bool(size_t)>& bind);
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t order;
    size_t index;
  };
  // (first extended resource asked, its count); ("", 0) for pods asking none.
  using GroupKey = std::pair<std::string, int64_t>;
  std::map<GroupKey, std::deque<Entry>> groups_;
  uint64_t next_order_ = 0;
  size_t size_ = 0;
};

}  // namespace gpuadmit
