// The capacity queue (waiting for GPUs): GPU pods that fit on no node they may use
// wait here, gated, instead of being retried by the scheduler; Lift says which to release as
// capacity frees. `gpuadmit simulate --queue` drives it in simulated time; the leader that lifts
// scheduling gates through the API will drive it live.
//
// The order: higher priority first, then earlier arrival, then namespace/name. Ties in arrival
// go by name, not by the order pods were added, so that two leaders rebuilding the queue from
// the API (whose creationTimestamp has one-second resolution) agree on it.
//
// Lift(nodes, now) walks the queue in that order over a copy of the nodes' free counts:
//   1. a pod waiting `timeout` or longer is released with reason kTimeout (the scheduler tries
//      it as any pod; capacity never came);
//   2. a pod whose ask fits in what is left on a node it may use is released there (kCapacity),
//      on the node where it leaves the least of its GPU resource free (best fit; ties by node
//      order), and that much is taken from the copy, so the pods behind count only on the rest;
//   3. a pod whose ask exceeds every allowed node's allocatable can never fit: released at once
//      (kUnplaceable), for the scheduler to report it Unschedulable rather than hold it for the
//      whole timeout;
//   4. otherwise it waits. The first pod that waits, the head, HOLDS the allowed node where it is
//      closest to fitting (the most of its GPU resource free; ties by node order): its ask is
//      taken from that node's copy (down to zero), so no pod behind it is released onto what the
//      head is waiting for.
// The backfill rule, then: a pod behind the head is released only if it fits without the head's
// held node's room (EASY backfilling, Lifka 1995, without run-time estimates). Only the head
// holds: a hold per waiting pod would close one node per pod, and a long queue would close the
// cluster; holding for the head alone costs one node and gives each pod, once it is the head,
// the same guarantee. Room freed on the held node accrues to the head until it fits. A priority
// above the head's may overtake it (that is what priority means); the timeout bounds the wait.
//
//   CapacityQueue queue(/*timeout_seconds=*/300);
//   queue.Add({.key = "ml/train-0", .arrived_at = 12.0, .ask = {{"nvidia.com/gpu", 8}}});
//   for (const LiftedPod& l : queue.Lift(nodes, now)) Release(l.key, l.node);  // nodes: NodeRoom
//
// Time is seconds on whatever clock the caller keeps (simulated, or since the leader started).
// The ask and the rooms may name any resource, "cpu" and "memory" included: each resource the
// ask names is compared with the room's, and a room that does not name it has none.
//
// Thread safety: none; one owner (the replay, or the leader's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/kube/requirements.h"

namespace gpuadmit {

struct QueuedPod {
  std::string key;  // namespace/name
  int32_t priority = 0;
  double arrived_at = 0;  // seconds
  ResourceList ask;
  std::vector<size_t> nodes;  // indices of Lift's `nodes` it may use; empty: every node
  bool placeable = false;     // set by Lift once some allowed node's allocatable fits the ask
};

// A node as Lift sees it; the same order on every call.
struct NodeRoom {
  std::string name;
  ResourceList allocatable;
  ResourceList free;  // allocatable minus what bound pods (and pods already released) hold
};

// Why a gate was lifted. Lift gives the first three; the live lifter (webhook/queue) also
// releases every pod the policy no longer queues (the queue turned off, or its namespace no
// longer listed): kDisabled.
enum class LiftReason { kCapacity, kTimeout, kUnplaceable, kDisabled };

// "capacity", "timeout", "unplaceable", "disabled": the label of the lifts metric.
std::string_view LiftReasonName(LiftReason reason);

struct LiftedPod {
  std::string key;
  LiftReason reason = LiftReason::kCapacity;
  size_t node = 0;    // kCapacity: where the queue counted it (the lifter pins it there)
  double waited = 0;  // seconds from arrival to the lift
  bool operator==(const LiftedPod&) const = default;
};

// The head's hold after a Lift: what it waits for, and where.
struct Hold {
  std::string key;
  size_t node = 0;
  bool operator==(const Hold&) const = default;
};

class CapacityQueue {
 public:
  explicit CapacityQueue(double timeout_seconds) : timeout_(timeout_seconds) {}

  // Queues `pod`; false (and nothing changes) when its key is already queued.
  bool Add(QueuedPod pod);
  // Drops the pod (deleted while it waited); false when it was not queued.
  bool Remove(std::string_view key);
  // The pods to release now, in queue order, and removes them from the queue (rules above).
  std::vector<LiftedPod> Lift(std::span<const NodeRoom> nodes, double now);
  // The head's hold as of the last Lift; none when nothing waited.
  const std::optional<Hold>& hold() const { return hold_; }
  size_t size() const { return by_key_.size(); }
  // The earliest arrival among the queued pods plus the timeout: when a Lift next releases a pod
  // for its timeout, if nothing else changes. Infinity when the queue is empty.
  double NextTimeout() const;

 private:
  struct Order {
    int32_t priority;
    double arrived_at;
    std::string key;
    bool operator<(const Order& o) const;
  };
  double timeout_;
  std::set<Order> order_;
  std::map<std::string, QueuedPod, std::less<>> by_key_;
  std::optional<Hold> hold_;
};

}  // namespace gpuadmit
