// "Could this pod run on that node?" for the parts of the scheduler's filter that gpuadmit
// mirrors: node readiness and cordons, nodeSelector, and taints (NoSchedule, NoExecute)
// against tolerations.
//
//   SchedulingConstraints c = ReadSchedulingConstraints(pod_spec);
//   if (CanRunOn(c, node)) ...
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpuadmit {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct Toleration {
  std::string key;  // empty with Exists: every key
  std::string op = "Equal";
  std::string value;
  std::string effect;  // empty: every effect
  bool Tolerates(const Taint& taint) const;
};

struct SchedulingConstraints {
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
};

struct NodeInventory;

SchedulingConstraints ReadSchedulingConstraints(const nlohmann::json& pod_spec);

// True when the node is Ready, not cordoned, carries every nodeSelector label and has no
// NoSchedule/NoExecute taint the pod does not tolerate.
bool CanRunOn(const SchedulingConstraints& constraints, const NodeInventory& node);

}  // namespace gpuadmit
