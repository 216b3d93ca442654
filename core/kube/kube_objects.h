// What the inventory keeps of Kubernetes Nodes and Pods, read through JsonView: off simdjson's
// tape for List pages and watch events (the reflector), or off nlohmann values (files, the
// simulator, the report).
//
//   auto page = JsonTape::Parse(body, kMaxJsonDepth);
//   for (JsonView item : page->root()["items"].Elements()) {
//     PodRecord p = ReadPod(item, "gpuadmit.io/reservation");
//   }
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"
#include "core/kube/requirements.h"
#include "core/kube/scheduling.h"

namespace gpuadmit {

// What NVIDIA GPU Feature Discovery's labels say about a node's GPUs; zero/empty when absent.
struct GpuFacts {
  std::string product;           // nvidia.com/gpu.product
  int64_t memory_mib = 0;        // nvidia.com/gpu.memory (per GPU)
  int64_t count = 0;             // nvidia.com/gpu.count
  std::string mig_strategy;      // nvidia.com/mig.strategy: none, single, mixed
  bool mig_capable = false;      // nvidia.com/mig.capable
  std::string sharing_strategy;  // nvidia.com/gpu.sharing-strategy: none, time-slicing, mps
  bool mps_capable = false;      // nvidia.com/mps.capable
  ResourceList mig_counts;       // nvidia.com/mig-<p>.count, keyed by nvidia.com/mig-<p>
};

// A Node's facts: everything but what pods use of it. Shared, immutable, between snapshots.
struct NodeFacts {
  std::string name;
  std::map<std::string, std::string, std::less<>> labels;
  std::vector<Taint> taints;
  bool ready = false;
  bool unschedulable = false;
  ResourceList allocatable;  // managed resources only
  ComputeRequest compute;    // allocatable cpu and memory; 0 when the node does not say
  std::string product;       // nvidia.com/gpu.product, "" when absent
  GpuFacts gpu;
  // The part of allocatable that DRA devices make up (core/dra/dra_devices.h), and their pools
  // ("driver/pool"); empty on a node whose GPUs come from the device plugin.
  ResourceList dra_allocatable;
  std::vector<std::string> dra_pools;
  int64_t dra_gpus_per_pcie_root = 0;  // the most DRA GPUs under one PCIe root
};

// What the inventory keeps of a pod queued for the scheduler (unbound, not terminal, with a
// need or naming DRA claims) to decide where its demand counts (queued_demand.h). Bound pods have
// none: 150,000 of them pay one pointer each.
struct QueuedFacts {
  std::string created;                // metadata.creationTimestamp (RFC 3339): the queue's order
  std::string preferred_node;         // a single-hostname preferred term's node (gpuadmit's choice)
  SchedulingConstraints constraints;  // the nodes it may use
  // The scheduler tried and found no node: a condition with reason Unschedulable (only
  // PodScheduled=False carries it).
  bool unschedulable = false;
  // spec.schedulingGates[].name, in order: while any is there the scheduler does not look at
  // the pod, so it is no queued demand (cluster_state.h); gpuadmit's own is <prefix>/capacity.
  std::vector<std::string> scheduling_gates;
  int32_t priority = 0;  // spec.priority: the capacity queue's first order

  // Whether `gate` is one of scheduling_gates.
  bool HeldBy(std::string_view gate) const {
    return std::find(scheduling_gates.begin(), scheduling_gates.end(), gate) !=
           scheduling_gates.end();
  }
};

// A Pod as the inventory counts it.
struct PodRecord {
  std::string key;          // namespace/name
  std::string node;         // spec.nodeName; "" while unbound
  std::string wanted_node;  // unbound, but required onto this node (nodeSelector or affinity)
  bool terminal = false;    // Succeeded or Failed: holds nothing
  ResourceList need;        // effective managed requests
  ComputeRequest compute;   // effective cpu and memory requests
  std::vector<std::string> gpu_products;  // with a need: GpuProductsOf(spec); empty: any
  std::string reservation;  // the reservation key gpuadmit's patch wrote, if any
  bool names_claims = false;  // spec.resourceClaims names some: DRA devices, counted by claims
  std::shared_ptr<const QueuedFacts> queued;  // queued pods only; immutable, shared by copies
};

NodeFacts ReadNode(JsonView node);

// spec.priority of `pod_spec`; 0 when absent or outside int32 (the apiserver keeps it within; an
// integer past INT64_MAX is first wrapped, as JsonView::integer() reads it).
int32_t PodPriority(JsonView pod_spec);

// `reservation_annotation` is the full key, e.g. "gpuadmit.io/reservation".
PodRecord ReadPod(JsonView pod, std::string_view reservation_annotation);

// "namespace/name" of an object, as PodRecord::key.
std::string ObjectKey(JsonView object);

}  // namespace gpuadmit
