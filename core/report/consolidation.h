// Consolidation: a bin-packing analysis. Which GPU nodes are underused, by allocation
// ("gpu-node-02 is underutilized (25.0% used, 2/8 GPUs allocated)") and by measured utilisation,
// and how many GPUs a repacking of the current GPU pods would free: the GPUs of the nodes that
// hold GPU pods now and none after the pods are packed onto as few nodes as their constraints
// allow.
//
// What is analysed: the GPU nodes (allocatable GPUs > 0, counted in GPU equivalents: a MIG slice
// its share of 7, a time-sliced replica 1/replicas) that are Ready and not cordoned; a cordoned
// or NotReady node takes no pod and is left out. The pods packed are the non-terminal pods bound
// to those nodes that ask for an nvidia.com/ resource, DaemonSet pods excepted: a DaemonSet pod
// stays where it is (its requests still take room there) and does not keep a node in use.
// Other pods (CPU only) stay too, and their cpu and memory requests take room.
//
// The packing is greedy first-fit-decreasing, not optimal (bin packing is NP-hard): pods in
// decreasing GPU equivalents (then key), each onto the first node in order of current allocation
// (fullest first, then most GPUs, then name) where it may run (CanRunOn: nodeSelector, required
// node affinity, taints; a pod with unknown constraints only onto nodes with its node's GPU
// product and no taint its node lacks) and that has room for every nvidia.com/ resource and the
// cpu and memory it requests. That fixes which nodes stay in use; a second pass keeps every pod
// already on a kept node in place and moves only the pods of the emptied nodes, so the list of
// moves is short (when that pass cannot place them all, the first pass's placement stands). A
// pod the packing can place nowhere stays on its node. When the packing would not use fewer
// nodes than now, nothing is proposed.
//
//   Consolidation c = Consolidate(nodes, pods, metrics.get(), {});
//   for (const UnderusedNode& n : c.underused) ...
//   c.potential_savings_gpus;  // GPUs of c.freed_nodes
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/kube/kube_objects.h"
#include "core/report/report_pod.h"

namespace gpuadmit {

struct ConsolidationOptions {
  // A node is underutilized below 50% of its GPUs allocated,
  double underused_allocation_percent = 50;
  // or below 30% GPU utilisation over the metrics window (placement's idle threshold).
  double underused_utilization_percent = 30;
};

struct UnderusedNode {
  std::string node;
  double capacity_gpus = 0;   // allocatable, in GPU equivalents
  double allocated_gpus = 0;  // requested by the non-terminal pods bound here
  double allocated_percent = 0;
  std::optional<double> utilization_percent;  // measured; nullopt without metrics for the node
  bool by_allocation = false;                 // allocated_percent below the threshold
  bool by_utilization = false;                // utilization_percent below the threshold
};

struct PodMove {
  std::string pod;  // namespace/name
  std::string from;
  std::string to;
  double gpus = 0;  // its GPU equivalents
};

struct Consolidation {
  ConsolidationOptions rule;  // what underutilized meant
  size_t gpu_nodes = 0;       // Ready, schedulable GPU nodes: the ones analysed
  double capacity_gpus = 0;
  double allocated_gpus = 0;
  std::vector<UnderusedNode> underused;  // by node name
  size_t pods_packed = 0;                // GPU pods the packing placed
  size_t pods_pinned = 0;                // DaemonSet GPU pods left where they are
  size_t nodes_in_use = 0;               // nodes holding a packed pod now
  size_t nodes_in_use_after = 0;         // ... and after the repacking
  std::vector<std::string> freed_nodes;  // in use now, not after; by name
  double potential_savings_gpus = 0;     // the capacity of freed_nodes
  std::vector<PodMove> moves;            // by pod key
  std::vector<std::string> unplaceable;  // pods the packing could put nowhere: left in place
};

// Mean window utilisation of a node's whole GPUs that report one (of its MIG instances when no
// whole GPU does); nullopt when none reports.
std::optional<double> MeasuredUtilizationPercent(const NodeGpuMetrics& node);

// A node's allocatable GPUs in GPU equivalents; nvidia.com/gpu of a time-sliced or MPS node
// that advertises its replicas under that name counts 1/replicas each.
double NodeGpuCapacity(const NodeFacts& node);

// The analysis the file comment describes. `metrics` may be null (no measured utilisation).
Consolidation Consolidate(std::span<const NodeFacts> nodes, std::span<const ReportPod> pods,
                          const ClusterGpuMetrics* metrics, const ConsolidationOptions& options);

}  // namespace gpuadmit
