// Node ranking for placement: which node, of those that could take a pod's
// GPU ask now, the policy's strategy prefers.
//
//   NodeAsk asks[] = {{"nvidia.com/gpu", 2}};
//   NodeRanking r = RankNodes(context, constraints, asks, /*earlier_hostname=*/"");
//   if (r.chosen) r.chosen->node->name() ...
//
// A node can take the pod when it is Ready, not cordoned, the pod's constraints allow it
// (CanRunOn), every asked resource has enough free, net of reservations, and, under the policy's
// filter, enough of its devices pass it (free framebuffer and utilisation by the latest metrics;
// a device without them passes). Strategies, ties
// always broken by node name:
//   most-idle  most idle GPUs that are also free: first nodes with at least the asked count,
//              then more of them, then the lower mean utilisation. A GPU is idle below
//              the policy's utilisation and memory thresholds; a node without metrics counts
//              every allocatable GPU as idle, so with no metrics at all this is "most free".
//   best-fit   least free left (net of reservations): packs nodes
//   worst-fit  most free: spreads
//   first-fit  the first node by name that can take it
//   score      per device, memory_weight x free framebuffer ratio + idle_weight x (100 -
//              utilisation) / 100 (0.6 and 0.4 by default); a node's score is the mean of its
//              best devices for the ask (core/inventory/gpu_availability.h); a device without
//              metrics scores as free and idle.
//   fragmentation  the node whose free devices the pod's placement leaves least fragmented
//              for the workload mix (FGD, Weng et al., USENIX ATC 2023, counted in devices): a
//              node's fragmentation is the free devices of the ranked resource that a pod drawn
//              from the mix (InventorySnapshot::mix(), the GPU pods present) could not use there,
//              for its GPU type, too few devices, cpu or memory left; the choice is the node
//              where placing the pod grows it least (or shrinks it most), then the least free
//              (best-fit). A pod without GPUs is ranked asking 0 of them.
// Every strategy skips a node without the pod's cpu and memory left, as the scheduler would.
// Cost: nodes come from the snapshot's per-resource index, most free first, and the walk stops
// as soon as no later node can rank higher; at most kMaxWeighed nodes that could take the pod are
// weighed (first-fit takes the nodes with room in name order and stops at the first; fragmentation
// walks from the least free up and weighs up to kMaxFragmentationWeighed).
//
// Thread safety: pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory/gpu_availability.h"
#include "core/plan/planner.h"

namespace gpuadmit {

// 64 nodes: weighing one (free counts, a reservation lookup, its metrics) takes about a quarter
// of a microsecond, so a 5,000-node cluster's decision stays near 16 us of its 50 us budget.
// Nodes come most free first, so those left unweighed are the fuller ones.
inline constexpr size_t kMaxWeighed = 64;
// 1,024 nodes for the fragmentation strategy: a node's fragmentation is no monotone function of
// its free count, so the walk cannot stop early, and weighing fewer costs placements (on the
// Alibaba trace, 256 nodes leave 2.3% of the GPUs unallocated at full demand where 512 leave
// 1.7%, measured when the strategy was added). Weighing one costs about 0.3 us, so a decision stays
// near 0.3 ms however large the cluster.
inline constexpr size_t kMaxFragmentationWeighed = 1024;
// 16 lines: what a person reads in an --explain trail; the other nodes are counted.
inline constexpr size_t kMaxExplainedNodes = 16;

// The resources a required pin reserves besides devices: cpu in millicores, memory in bytes.
inline constexpr std::string_view kCpuResource = "cpu";
inline constexpr std::string_view kMemoryResource = "memory";

// Why a pod of the workload mix could not use a node's free devices.
enum class Stranding { kNone, kGpuType, kDevices, kCpu, kMemory };

// One resource the pod asks for; the first of a list is the one ranked by.
struct NodeAsk {
  std::string resource;
  int64_t count = 0;
};

// The managed resources `effective` asks for (count > 0), the one to rank by first: whole GPUs,
// else the first MIG profile, else the first other (shared GPU replicas). Empty: no GPU asked.
std::vector<NodeAsk> AsksOf(const ResourceList& effective);

// What ranking found out about one node.
struct RankedNode {
  const NodeInventory* node = nullptr;
  bool fits = false;                          // the node can take the pod now
  std::string why_not;                        // when it cannot, and the context explains
  int64_t allocatable = 0;                    // of the ranked resource
  int64_t free = 0;                           // of the ranked resource, net of reservations
  int64_t idle = 0;                           // idle devices that are also free
  std::optional<double> utilization_percent;  // mean over its devices; none without metrics
  std::optional<double> memory_used_percent;  // mean over its whole GPUs
  double score = 0;  // score: its weighted sum; fragmentation: minus the growth it causes
};

struct NodeRanking {
  std::optional<RankedNode> chosen;
  bool kept_earlier = false;          // the pod's earlier hostname choice still fits
  std::vector<RankedNode> explained;  // with context.explain: the first nodes examined
  size_t examined = 0;                // nodes looked at
  size_t weighed = 0;                 // of those, nodes that could take the pod
  size_t offering = 0;                // nodes whose allocatable has the ranked resource
  // fragmentation: what the chosen node is left with and why the mix could not use it
  std::string stranding;
};

// Ranks the nodes for `asks` (non-empty; ranked by asks[0]) under `constraints`. A node named
// by `earlier_hostname` (the pod's own hostname preference, from an earlier review) is kept when
// it can still take the pod, so reviewing a placed pod again changes nothing.
// `compute` is the pod's cpu and memory request.
NodeRanking RankNodes(const PlanContext& context, const SchedulingConstraints& constraints,
                      std::span<const NodeAsk> asks, const ComputeRequest& compute,
                      std::string_view earlier_hostname);

// The node's kubernetes.io/hostname label, else its name.
const std::string& HostnameOf(const NodeInventory& node);

// The policy's node filter on GPU metrics.
DeviceFilter PlacementFilter(const PlacementPolicy& placement);

// "most-idle", "best-fit", ...: the policy's spelling.
std::string_view StrategyName(PlacementStrategy strategy);

}  // namespace gpuadmit
