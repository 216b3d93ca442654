#include "core/scheduling.h"

#include <algorithm>

#include "core/inventory.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool Toleration::Tolerates(const Taint& taint) const {
  if (!effect.empty() && effect != taint.effect) return false;
  if (op == "Exists") return key.empty() || key == taint.key;
  return key == taint.key && value == taint.value;
}

SchedulingConstraints ReadSchedulingConstraints(const json& pod_spec) {
  SchedulingConstraints c;
  if (!pod_spec.is_object()) return c;
  if (auto it = pod_spec.find("nodeSelector"); it != pod_spec.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) c.node_selector[k] = v.get<std::string>();
    }
  }
  if (auto it = pod_spec.find("tolerations"); it != pod_spec.end() && it->is_array()) {
    for (const json& t : *it) {
      if (!t.is_object()) continue;
      Toleration tol{Str(t, "key"), Str(t, "operator"), Str(t, "value"), Str(t, "effect")};
      if (tol.op.empty()) tol.op = "Equal";
      c.tolerations.push_back(std::move(tol));
    }
  }
  return c;
}

bool CanRunOn(const SchedulingConstraints& constraints, const NodeInventory& node) {
  if (!node.ready || node.unschedulable) return false;
  for (const auto& [key, value] : constraints.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (std::none_of(constraints.tolerations.begin(), constraints.tolerations.end(),
                     [&](const Toleration& t) { return t.Tolerates(taint); })) {
      return false;
    }
  }
  return true;
}

}  // namespace gpuadmit
