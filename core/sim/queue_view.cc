#include "core/sim/queue_view.h"

#include <cstdint>

#include "core/json/json_fields.h"
#include "core/kube/kube_objects.h"
#include "core/kube/scheduling.h"

namespace gpuadmit {
namespace {

// 2^30: a pod capacity no node reaches.
constexpr int64_t kUnlimitedPods = int64_t{1} << 30;

}  // namespace

NodeRoom RoomOf(const SimNode& node) {
  NodeRoom r{node.facts->name, node.allocatable.extended, {}};
  r.allocatable["cpu"] = node.allocatable.cpu_milli;
  r.allocatable["memory"] = node.allocatable.memory;
  r.allocatable["pods"] = node.allocatable.pods > 0 ? node.allocatable.pods : kUnlimitedPods;
  r.free = r.allocatable;
  for (const auto& [resource, count] : node.requested.extended) r.free[resource] -= count;
  r.free["cpu"] -= node.requested.cpu_milli;
  r.free["memory"] -= node.requested.memory;
  r.free["pods"] -= node.requested.pods;
  return r;
}

QueuedPod QueuedPodOf(std::string key, double arrived_at, const nlohmann::json& object,
                      const SimPod& pod, std::span<const SimNode> nodes) {
  QueuedPod q{
      std::move(key), PodPriority(At(object, {"spec"})), arrived_at, pod.requests.extended, {}};
  q.ask["cpu"] = pod.requests.cpu_milli;
  q.ask["memory"] = pod.requests.memory;
  q.ask["pods"] = 1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (pod.node_name.empty() ? CanRunOn(pod.constraints, *nodes[n].facts)
                              : pod.node_name == nodes[n].facts->name) {
      q.nodes.push_back(n);
    }
  }
  if (q.nodes.empty()) q.nodes.push_back(nodes.size());
  return q;
}

}  // namespace gpuadmit
