#include "core/kube/scheduling.h"

#include <algorithm>
#include <charconv>

#include "core/json/json_fields.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

bool ParseInt(const std::string& s, int64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<NodeSelectorRequirement> ReadRequirements(const json& term, const char* field,
                                                      bool on_field) {
  std::vector<NodeSelectorRequirement> out;
  auto it = term.find(field);
  if (it == term.end() || !it->is_array()) return out;
  for (const json& e : *it) {
    if (!e.is_object()) continue;
    NodeSelectorRequirement r{StringAt(e, {"key"}), StringAt(e, {"operator"}), {}, on_field};
    if (auto values = e.find("values"); values != e.end() && values->is_array()) {
      for (const json& v : *values) {
        if (v.is_string()) r.values.push_back(v.get<std::string>());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool Matches(const NodeSelectorRequirement& r, const NodeFacts& node) {
  const std::string* value = nullptr;
  if (r.on_field) {
    if (r.key == "metadata.name") value = &node.name;
  } else if (auto it = node.labels.find(r.key); it != node.labels.end()) {
    value = &it->second;
  }
  auto listed = [&] {
    return value != nullptr &&
           std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  };
  if (r.op == "In") return listed();
  if (r.op == "NotIn") return !listed();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t have = 0;
    int64_t bound = 0;
    if (value == nullptr || r.values.size() != 1 || !ParseInt(*value, have) ||
        !ParseInt(r.values[0], bound)) {
      return false;
    }
    return r.op == "Gt" ? have > bound : have < bound;
  }
  return false;  // an unknown operator matches nothing, as the scheduler treats it as invalid
}

}  // namespace

std::string PreferredHostname(const json& pod_spec) {
  const json& terms =
      At(pod_spec, {"affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
  if (!terms.is_array()) return "";
  for (const json& term : terms) {
    const json& expressions = At(term, {"preference", "matchExpressions"});
    if (!expressions.is_array() || expressions.size() != 1) continue;
    const json& e = expressions[0];
    const json& values = At(e, {"values"});
    if (StringAt(e, {"key"}) == "kubernetes.io/hostname" && StringAt(e, {"operator"}) == "In" &&
        values.is_array() && values.size() == 1 && values[0].is_string()) {
      return values[0].get<std::string>();
    }
  }
  return "";
}

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
  const json& terms =
      At(pod_spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms"});
  if (terms.is_array()) {
    for (const json& term : terms) {
      if (!term.is_object()) continue;
      NodeSelectorTerm t;
      t.requirements = ReadRequirements(term, "matchExpressions", false);
      auto fields = ReadRequirements(term, "matchFields", true);
      t.requirements.insert(t.requirements.end(), fields.begin(), fields.end());
      c.required_terms.push_back(std::move(t));
    }
  }
  if (auto it = pod_spec.find("tolerations"); it != pod_spec.end() && it->is_array()) {
    for (const json& t : *it) {
      if (!t.is_object()) continue;
      Toleration tol{StringAt(t, {"key"}), StringAt(t, {"operator"}), StringAt(t, {"value"}),
                     StringAt(t, {"effect"})};
      if (tol.op.empty()) tol.op = "Equal";
      c.tolerations.push_back(std::move(tol));
    }
  }
  return c;
}

std::vector<WeightedTerm> ReadPreferredTerms(const json& pod_spec) {
  std::vector<WeightedTerm> out;
  const json& terms =
      At(pod_spec, {"affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
  if (!terms.is_array()) return out;
  for (const json& t : terms) {
    const json& preference = At(t, {"preference"});
    const json& weight = At(t, {"weight"});
    if (!preference.is_object() || !weight.is_number_integer()) continue;
    WeightedTerm w;
    w.weight = weight.get<int32_t>();
    w.term.requirements = ReadRequirements(preference, "matchExpressions", false);
    auto fields = ReadRequirements(preference, "matchFields", true);
    w.term.requirements.insert(w.term.requirements.end(), fields.begin(), fields.end());
    if (!w.term.requirements.empty()) out.push_back(std::move(w));
  }
  return out;
}

bool TermMatches(const NodeSelectorTerm& term, const NodeFacts& node) {
  // An empty term matches no node (the scheduler's rule).
  return !term.requirements.empty() &&
         std::all_of(term.requirements.begin(), term.requirements.end(),
                     [&](const auto& r) { return Matches(r, node); });
}

bool CanRunOn(const SchedulingConstraints& constraints, const NodeFacts& node) {
  if (!node.ready || node.unschedulable) return false;
  for (const auto& [key, value] : constraints.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  if (!constraints.required_terms.empty() &&
      std::none_of(constraints.required_terms.begin(), constraints.required_terms.end(),
                   [&](const NodeSelectorTerm& term) { return TermMatches(term, node); })) {
    return false;
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

std::string WhyCannotRunOn(const SchedulingConstraints& c, const NodeFacts& node) {
  if (!node.ready) return "not ready";
  if (node.unschedulable) return "cordoned";
  for (const auto& [key, value] : c.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return "nodeSelector " + key + " differs";
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (std::none_of(c.tolerations.begin(), c.tolerations.end(),
                     [&](const Toleration& t) { return t.Tolerates(taint); })) {
      return "taint " + taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
             taint.effect + " not tolerated";
    }
  }
  if (!c.required_terms.empty() &&
      std::none_of(c.required_terms.begin(), c.required_terms.end(),
                   [&](const NodeSelectorTerm& term) { return TermMatches(term, node); })) {
    return "required node affinity does not match";
  }
  return "";
}

}  // namespace gpuadmit
