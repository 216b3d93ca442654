// ClusterState: the inventory's working copy of the cluster, kept up to date one Node or Pod at a
// time (list results and watch events) and published as immutable InventorySnapshots. What a
// bound pod uses is added to its node as it arrives and taken away as it changes or goes, so no
// step walks all pods; unbound pods wait in a queue, counted on nodes when a snapshot is taken
// (queued_demand.h: O(queued pods), plus O(nodes) per resource they ask for). An unbound pod
// that carries a scheduling gate (spec.schedulingGates) is invisible to the scheduler until the
// gate is lifted: it is kept aside, counted on no node and in no queued demand, and the snapshot
// lists it (InventorySnapshot::gated(), for the gate lifter). Lifted, it is queued demand again.
//
//   ClusterState state("gpuadmit.io/reservation");
//   state.UpsertPod(ReadPod(object, state.reservation_annotation()));
//   auto snapshot = std::make_shared<const InventorySnapshot>(state.Snapshot(++version));
//
// Thread safety: none; one writer (the inventory thread) owns it. Snapshots it returns are
// immutable and safe to share.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dra/dra_devices.h"
#include "core/inventory/inventory.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {

class ClusterState {
 public:
  explicit ClusterState(std::string reservation_annotation)
      : reservation_annotation_(std::move(reservation_annotation)) {}

  const std::string& reservation_annotation() const { return reservation_annotation_; }

  void UpsertNode(NodeFacts node);
  void DeleteNode(std::string_view name);
  // Adds or replaces a pod (by its key), moving what it uses between nodes as needed.
  void UpsertPod(PodRecord pod);
  void DeletePod(std::string_view key);
  // After a relist: the given objects are the whole set; the others are gone.
  void ReplaceNodes(std::vector<NodeFacts> nodes);
  void ReplacePods(std::vector<PodRecord> pods);

  // DRA objects: their devices count on their nodes (dra_devices.h) in every later snapshot. A
  // pod that names claims and asks no extended resource keeps its reservation until a claim
  // made for it is allocated (the devices count from then on), not merely until it arrives.
  // `edit` changes the DRA objects (DraDevices' Upsert, Delete and Replace calls).
  template <typename Edit>
  void EditDra(Edit edit) {
    edit(dra_);
    DraChanged();
  }
  // A claim, as EditDra would upsert it; allocated, it releases the reservation of the pod it
  // was made for.
  void UpsertClaim(ResourceClaimRecord claim);
  const DraDevices& dra() const { return dra_; }

  size_t node_count() const { return nodes_.size(); }
  size_t pod_count() const { return pods_.size(); }

  // Copies the current state into a snapshot (O(nodes), shares every NodeFacts).
  InventorySnapshot Snapshot(uint64_t version) const;

  // Brings `snapshot`, which this state made and nobody else reads, up to date in place: only
  // the nodes whose pods changed since the last Refresh are copied again and moved in the
  // indexes, and queued demand is recounted (O(changed nodes x log nodes + queued pods)). For a
  // single-threaded owner that decides after every change (simulate's replay), where Snapshot's
  // O(nodes) copy would dominate. The first call takes a full Snapshot and starts tracking
  // changes; nodes must not be added or removed after it.
  void Refresh(InventorySnapshot& snapshot, uint64_t version);

  // The node of each bound pod whose name (any namespace) is in `names`: how a dcgm-exporter
  // host label that is its pod's name finds the node. O(pods); a name in two namespaces keeps
  // the first met; a name that is a node's own is left out (that host already is the node).
  std::map<std::string, std::string, std::less<>> NodesOfPodsNamed(
      const std::set<std::string, std::less<>>& names) const;

  // Copies of every node and pod, each in name (key) order: for GET /report, which repacks
  // pods. O(nodes + pods).
  std::vector<NodeFacts> Nodes() const;
  std::vector<PodRecord> Pods() const;

  // Reservation keys carried by pods that arrived since the last call: the ledger releases them.
  std::vector<std::string> TakeArrivedReservations();
  // The reservation keys of the pods that wait for their DRA claims: unbound, not gated, not
  // found unschedulable, naming claims none of which is allocated yet. The ledger keeps them past
  // their TTL (ReservationLedger::KeepWhileWaiting), as a pod's queued need is kept.
  std::set<std::string, std::less<>> WaitingClaimReservations() const;

 private:
  void Count(const PodRecord& pod, int sign);
  // What a snapshot holds besides its nodes, with `unplaceable` from CountQueue: O(gated pods).
  InventorySnapshot::Totals TotalsOf(uint64_t version, ResourceList unplaceable) const;
  std::shared_ptr<const std::map<std::string, NodeDevices, std::less<>>> DraDevicesNow() const;
  // Counts the queued pods onto `nodes` (their `queued`, empty on entry) in queue order; returns
  // what counts nowhere, the pods marked Unschedulable included.
  ResourceList CountQueue(std::vector<NodeInventory>& nodes) const;

  // A DRA object changed: the counts below are stale.
  void DraChanged();
  // The node's DRA counts (nullptr: it has no DRA devices), from the cache, recounted after a
  // DRA change (O(devices)).
  const DraNodeCounts* DraCountsOf(const std::string& name) const;
  // The node's facts with its DRA devices merged in (cached until the node or DRA changes), and
  // what its bound pods use plus what claims hold of the resources `facts` (the merged facts)
  // has from DRA.
  std::shared_ptr<const NodeFacts> FactsOf(const std::string& name,
                                           const std::shared_ptr<const NodeFacts>& facts) const;
  ResourceList UsedOn(const std::string& name, const NodeFacts& facts) const;

  std::string reservation_annotation_;
  std::unordered_map<std::string, std::shared_ptr<const NodeFacts>> nodes_;
  DraDevices dra_;
  // Caches of DraDevices::CountByNode and of the nodes' merged facts; cleared by DraChanged.
  mutable std::optional<std::map<std::string, DraNodeCounts, std::less<>>> dra_counts_;
  // DraDevices::DevicesByNode, shared by the snapshots made until the next DRA change.
  mutable std::shared_ptr<const std::map<std::string, NodeDevices, std::less<>>> dra_devices_;
  mutable std::unordered_map<std::string, std::shared_ptr<const NodeFacts>> merged_;
  bool dra_changed_ = false;  // since the last Refresh
  std::unordered_map<std::string, PodRecord> pods_;
  // What bound pods use, by node name (a pod may name a node not seen yet).
  std::unordered_map<std::string, ResourceList> used_;
  // cpu and memory of every non-terminal bound pod, GPU or not, by node name.
  std::unordered_map<std::string, ComputeRequest> compute_used_;
  std::map<PodShape, int64_t> mix_;  // non-terminal GPU pods, bound, queued or gated, by shape
  bool tracking_ = false;            // Refresh has been called: changed_ is kept
  std::set<std::string, std::less<>> changed_;  // nodes whose bound pods changed since
  ResourceList queued_;                         // every unbound, ungated pod's need
  // The unbound pods with a need, in queue order: (creationTimestamp, key), but for those marked
  // Unschedulable, whose need is summed in unschedulable_need_.
  std::set<std::pair<std::string, std::string>> queue_;
  ResourceList unschedulable_need_;
  // The keys of the unbound pods with a need held back by a scheduling gate, in key order.
  std::set<std::string, std::less<>> gated_;
  // The unbound pods that name claims and carry a reservation, but those gated or found
  // unschedulable: key -> reservation key.
  std::map<std::string, std::string, std::less<>> claim_pods_;
  std::vector<std::string> arrived_reservations_;
};

}  // namespace gpuadmit
