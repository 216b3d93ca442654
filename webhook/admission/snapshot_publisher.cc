#include "webhook/admission/snapshot_publisher.h"

#include <string>
#include <utility>
#include <vector>


namespace gpuadmit {

void SnapshotPublisher::Publish(std::shared_ptr<const InventorySnapshot> snapshot) {
  handler_.SetSnapshot(snapshot);
  if (snapshot == nullptr) return;
  std::vector<Claim> reserved;
  if (reserved_ != nullptr) reserved = reserved_->Totals();
  InventoryGauges gauges = ComputeInventoryGauges(*snapshot, reserved, options_.per_node);
  std::vector<Metrics::ResourceSeries> resources;
  std::vector<Metrics::StrandedSeries> stranded;
  auto add = [&](const std::string& node, const auto& by_resource, const auto& by_profile) {
    for (const auto& [resource, g] : by_resource) {
      resources.push_back(
          {node, resource, g.allocatable, g.used, g.queued, g.reserved, g.free, g.dra});
    }
    for (const auto& [profile, slices] : by_profile) stranded.push_back({node, profile, slices});
  };
  add("", gauges.cluster, gauges.stranded_slices);
  for (const NodeGauges& n : gauges.nodes) add(n.node, n.resources, n.stranded_slices);
  metrics_.SetInventory(resources, stranded, handler_.snapshot_at_unix_ms() / 1000);
  gauges.nodes.clear();  // the per-node series are rendered; the status page computes its own
  gauges_.store(std::make_shared<const InventoryGauges>(std::move(gauges)));
}

}  // namespace gpuadmit
