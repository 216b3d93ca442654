// InventorySnapshot: an immutable picture of the cluster's GPU nodes, what each can allocate,
// what the non-terminal pods bound to it already use, and what the pods queued for the scheduler
// are counted on it (queued_demand.h), the pods a scheduling gate holds back from the scheduler
// (gated(): the capacity queue's, for the gate lifter), with per-resource indexes so a decision's
// lookup does no work proportional to pods (and usually little proportional to nodes).
// Built by ClusterState (cluster_state.h) from its parts, published whole and shared read-only
// by every request as std::shared_ptr<const InventorySnapshot>.
//
//   auto snapshot = InventorySnapshot::FromObjects(list);  // `kubectl get nodes,pods -A -o json`
//   for (const NodeInventory* n : snapshot.value().NodesOffering("nvidia.com/mig-1g.10gb")) ...
//
// Thread safety: immutable once published; safe to read from any thread. UpdateNodes and
// SetTotals are for its builder, before it publishes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dra/dra_devices.h"
#include "core/dra/dra_objects.h"
#include "core/inventory/workload_mix.h"
#include "core/kube/kube_objects.h"
#include "core/kube/requirements.h"
#include "core/result.h"

namespace gpuadmit {

// The label a node's GPU type is often written under by hand (`kubectl label nodes n
// accelerator=nvidia-tesla-a100`), read where the product label is absent.
inline constexpr std::string_view kAcceleratorLabel = "accelerator";

struct NodeInventory {
  std::shared_ptr<const NodeFacts> facts;  // shared between snapshots until the Node changes
  ResourceList used;                       // effective requests of non-terminal pods bound here
  ResourceList queued;          // the needs of unbound pods counted here (queued_demand.h)
  // cpu and memory requested by the non-terminal pods bound here, and by the unbound ones a
  // required affinity pins here (PodRecord::wanted_node) that the scheduler has not found
  // unschedulable
  ComputeRequest compute_used;

  const std::string& name() const { return facts->name; }
  std::string_view Product() const { return facts->product; }
  // Allocatable minus used and queued, never below zero: what a decision may hand out (before
  // the reservation ledger's share).
  int64_t Free(std::string_view resource) const;
  // cpu and memory left for `ask`: what the scheduler's NodeResourcesFit checks. A node that
  // states no allocatable cpu or memory is not checked for it.
  ComputeRequest ComputeFree() const;
  bool FitsCompute(const ComputeRequest& ask) const;
};

// The position of the node `name` in `nodes` (sorted by name), or nullopt.
std::optional<size_t> IndexOfNode(std::span<const NodeInventory> nodes, std::string_view name);

class InventorySnapshot {
 public:
  // What a snapshot holds besides its nodes, set whole by its builder.
  struct Totals {
    ResourceList queued;       // queued()
    ResourceList unplaceable;  // unplaceable()
    std::vector<PodRecord> gated;
    std::vector<WeightedShape> mix;
    std::map<std::string, DeviceClassRecord, std::less<>> device_classes;
    std::map<std::string, ClaimTemplateRecord, std::less<>> claim_templates;
    std::shared_ptr<const std::map<std::string, NodeDevices, std::less<>>> dra_devices;
    std::map<std::string, std::string, std::less<>> claim_pod_reservations;
    size_t pod_count = 0;
    uint64_t version = 0;
  };

  InventorySnapshot() = default;
  // A snapshot of `nodes` (sorted by name; their queued counted) and `totals`, indexed.
  InventorySnapshot(std::vector<NodeInventory> nodes, Totals totals);
  // Move-only: the indexes point into nodes_, which a move keeps and a copy would not.
  InventorySnapshot(InventorySnapshot&&) = default;
  InventorySnapshot& operator=(InventorySnapshot&&) = default;
  InventorySnapshot(const InventorySnapshot&) = delete;
  InventorySnapshot& operator=(const InventorySnapshot&) = delete;

  // Builds a snapshot from a v1 List (or NodeList/PodList) whose items are Nodes and Pods, and
  // may be ResourceSlices, ResourceClaims, DeviceClasses and ResourceClaimTemplates (their devices counted on their
  // nodes, core/dra/dra_devices.h).
  // Succeeded and Failed pods free their devices; unbound pods are queued demand, or gated().
  // `reservation_annotation` is the key decisions write their reservation under (the policy's
  // Annotation("reservation")). Errors when `list` has no `items` array.
  static Result<InventorySnapshot> FromObjects(
      const nlohmann::json& list, std::string_view reservation_annotation = "gpuadmit.io/reservation");

  // Every node, sorted by name.
  const std::vector<NodeInventory>& nodes() const { return nodes_; }
  const NodeInventory* FindNode(std::string_view name) const;
  // The nodes whose allocatable has `resource`, most free first (ties by name).
  std::span<const NodeInventory* const> NodesOffering(std::string_view resource) const;
  // Every resource some node offers, in name order.
  std::vector<std::string_view> ResourcesOffered() const;
  // The GPU products of the nodes offering `resource`, in name order.
  std::span<const std::string_view> ProductsOffering(std::string_view resource) const;
  // The kAcceleratorLabel values of the nodes offering `resource` that have no kProductLabel,
  // in name order: the GPU type of a node labelled by hand.
  std::span<const std::string_view> AcceleratorsOffering(std::string_view resource) const;
  // Unbound pods' demand, cluster-wide: what is counted on nodes (NodeInventory::queued) plus
  // unplaceable().
  const ResourceList& queued() const { return queued_; }
  // The part of queued() counted on no node: pods that fit on no node they may use, or that the
  // scheduler has marked Unschedulable. It holds no device.
  const ResourceList& unplaceable() const { return unplaceable_; }
  // The unbound pods with a GPU need that carry a scheduling gate (any, gpuadmit's or not), by
  // key: the scheduler does not see them, so they are in neither queued() nor any node's queued.
  // Copies sharing their QueuedFacts (scheduling_gates, priority, created, constraints); few.
  const std::vector<PodRecord>& gated() const { return gated_; }
  // How many of gated() carry the gate named `gate`.
  size_t GatedBy(std::string_view gate) const;
  size_t pod_count() const { return pod_count_; }
  uint64_t version() const { return version_; }
  // The kMixShapes most common shapes of the GPU pods held, bound, queued or gated, most pods
  // first.
  const std::vector<WeightedShape>& mix() const { return mix_; }
  // The cluster's DRA DeviceClasses, by name (what a claim's deviceClassName selects).
  const std::map<std::string, DeviceClassRecord, std::less<>>& device_classes() const {
    return device_classes_;
  }
  // The cluster's ResourceClaimTemplates, by namespace/name (what a pod naming one asks).
  const std::map<std::string, ClaimTemplateRecord, std::less<>>& claim_templates() const {
    return claim_templates_;
  }

  // Each node's DRA devices as the allocator would find them now (DraDevices::DevicesByNode);
  // empty without DRA devices.
  const std::map<std::string, NodeDevices, std::less<>>& dra_devices() const;
  // The reservation key of the unbound pod `pod` ("namespace/name") that names claims, "" when
  // it carries none: what a claim made for it later finds its pod's admission by.
  std::string_view ReservationOfClaimPod(std::string_view pod) const;

  // For a builder that keeps one snapshot current instead of making a new one: `edit` changes
  // nodes' used, compute_used and queued in place (never their facts, order or number) and
  // returns every node it changed; only those are then moved in the indexes.
  using NodeEdit = std::function<std::vector<const NodeInventory*>(std::vector<NodeInventory>&)>;
  void UpdateNodes(const NodeEdit& edit);
  void SetTotals(Totals totals);

 private:
  void BuildIndexes();
  // Moves the `moved` nodes (of nodes_, sorted by address) to where their free counts now put
  // them in each index.
  void Reposition(std::span<const NodeInventory* const> moved);

  std::vector<NodeInventory> nodes_;
  std::map<std::string, std::vector<const NodeInventory*>, std::less<>> by_resource_;
  std::map<std::string, std::vector<std::string_view>, std::less<>> products_by_resource_;
  std::map<std::string, std::vector<std::string_view>, std::less<>> accelerators_by_resource_;
  ResourceList queued_;
  ResourceList unplaceable_;
  std::vector<PodRecord> gated_;
  std::map<std::string, size_t, std::less<>> gated_by_;  // gate name -> pods of gated_ with it
  std::vector<WeightedShape> mix_;
  std::map<std::string, DeviceClassRecord, std::less<>> device_classes_;
  std::map<std::string, ClaimTemplateRecord, std::less<>> claim_templates_;
  std::shared_ptr<const std::map<std::string, NodeDevices, std::less<>>> dra_devices_;
  std::map<std::string, std::string, std::less<>> claim_pod_reservations_;
  size_t pod_count_ = 0;
  uint64_t version_ = 0;
};

}  // namespace gpuadmit
