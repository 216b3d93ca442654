// Inventory gauges: what one published InventorySnapshot holds of each extended resource, summed
// over the cluster (and, when asked, per node), plus the MIG capacity stranded by the queue. The
// numbers behind /metrics' gpuadmit_cluster_resource_* and gpuadmit_mig_stranded_slices
// (webhook/telemetry/metrics.h renders them); computed once per snapshot, never per scrape.
//
//   InventoryGauges g = ComputeInventoryGauges(snapshot, ledger.Totals(), /*per_node=*/false);
//   g.cluster.at("nvidia.com/mig-2g.20gb").free;
//
// Definitions (per node, then summed; docs/monitoring.md says the same):
//   allocatable  the node's allocatable count;
//   used         the effective requests of the non-terminal pods bound to it;
//   queued       the needs of unbound pods counted on it (queued_demand.h); pods that fit on no
//                node are not on any node and not in this sum;
//   reserved     devices admission decisions reserved on it for pods not yet seen;
//   free         max(0, allocatable - used - queued - reserved): what a decision may hand out;
//   dra          the part of allocatable that DRA devices make up (NodeFacts::dra_allocatable).
//   stranded     (MIG only, in compute slices) while unbound MIG pods fit on no node
//                (InventorySnapshot::unplaceable()), the free instances of each profile that none
//                of them asks for. A pod's profile is fixed once admitted, so such an instance
//                can serve none of them; with nothing waiting, nothing is stranded. The inventory
//                sees instance counts, not where they sit on each GPU, so slices that no instance
//                covers are not knowable here.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"

namespace gpuadmit {

struct ResourceGauges {
  int64_t allocatable = 0;
  int64_t used = 0;
  int64_t queued = 0;
  int64_t reserved = 0;
  int64_t free = 0;
  int64_t dra = 0;
  bool operator==(const ResourceGauges&) const = default;
};

struct NodeGauges {
  std::string node;
  std::map<std::string, ResourceGauges, std::less<>> resources;  // by resource name
  std::map<std::string, int64_t, std::less<>> stranded_slices;   // by MIG profile ("2g.20gb")
};

struct InventoryGauges {
  // Every resource a node's allocatable names (0 included), or a pod uses or queues on a node.
  std::map<std::string, ResourceGauges, std::less<>> cluster;
  // Every MIG profile of `cluster`, 0 when nothing is stranded.
  std::map<std::string, int64_t, std::less<>> stranded_slices;
  std::vector<NodeGauges> nodes;  // per_node only: every node, in name order
};

// The gauges of `snapshot`, with `reserved` (a ledger's totals per node and resource, as
// ReservationLedger::Totals gives them) subtracted from free. O(nodes x resources per node).
InventoryGauges ComputeInventoryGauges(const InventorySnapshot& snapshot,
                                       const std::vector<Claim>& reserved, bool per_node);

}  // namespace gpuadmit
