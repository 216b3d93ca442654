#include "core/kube/scheduling.h"

#include <algorithm>
#include <charconv>

#include "core/kube/kube_objects.h"

namespace gpuadmit {
namespace {

bool ParseInt(const std::string& s, int64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<NodeSelectorRequirement> ReadRequirements(JsonView term, const char* field,
                                                      bool on_field) {
  std::vector<NodeSelectorRequirement> out;
  for (JsonView e : term[field].Elements()) {
    if (!e.is_object()) continue;
    NodeSelectorRequirement r{
        std::string(e["key"].string()), std::string(e["operator"].string()), {}, on_field};
    for (JsonView v : e["values"].Elements()) {
      if (v.is_string()) r.values.emplace_back(v.string());
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

std::string PreferredHostname(JsonView pod_spec) {
  JsonView terms =
      pod_spec.At({"affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
  for (JsonView term : terms.Elements()) {
    JsonView expressions = term.At({"preference", "matchExpressions"});
    if (expressions.size() != 1) continue;
    JsonView e = expressions[0];
    JsonView values = e["values"];
    if (e["key"].string() == "kubernetes.io/hostname" && e["operator"].string() == "In" &&
        values.size() == 1 && values[0].is_string()) {
      return std::string(values[0].string());
    }
  }
  return "";
}

bool Toleration::Tolerates(const Taint& taint) const {
  if (!effect.empty() && effect != taint.effect) return false;
  if (op == "Exists") return key.empty() || key == taint.key;
  return key == taint.key && value == taint.value;
}

SchedulingConstraints ReadSchedulingConstraints(JsonView pod_spec) {
  SchedulingConstraints c;
  if (!pod_spec.is_object()) return c;
  auto [node_selector, affinity, tolerations] =
      pod_spec.Fields({"nodeSelector", "affinity", "tolerations"});  // one pass over the spec
  for (const auto& [k, v] : node_selector.Members()) {
    if (v.is_string()) c.node_selector[std::string(k)] = std::string(v.string());
  }
  JsonView terms = affinity.At(
      {"nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  for (JsonView term : terms.Elements()) {
    if (!term.is_object()) continue;
    NodeSelectorTerm t;
    t.requirements = ReadRequirements(term, "matchExpressions", false);
    auto fields = ReadRequirements(term, "matchFields", true);
    t.requirements.insert(t.requirements.end(), fields.begin(), fields.end());
    c.required_terms.push_back(std::move(t));
  }
  c.tolerations.reserve(tolerations.size());
  for (JsonView t : tolerations.Elements()) {
    if (!t.is_object()) continue;
    auto [key, op, value, effect] = t.Fields({"key", "operator", "value", "effect"});
    // Filled in place: every pod carries the two default tolerations, read on every review.
    Toleration& tol = c.tolerations.emplace_back();
    tol.key.assign(key.string());
    if (!op.string().empty()) tol.op.assign(op.string());  // else the default, Equal
    tol.value.assign(value.string());
    tol.effect.assign(effect.string());
  }
  return c;
}

std::vector<std::string> GpuProductsOf(JsonView pod_spec) {
  auto [node_selector, affinity] = pod_spec.Fields({"nodeSelector", "affinity"});
  std::vector<std::string_view> products;
  if (std::string_view selected = node_selector[kProductLabel].string(); !selected.empty()) {
    products.push_back(selected);
  } else {
    JsonView terms = affinity.At(
        {"nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
    for (JsonView term : terms.Elements()) {
      bool names_product = false;
      for (JsonView e : term["matchExpressions"].Elements()) {
        if (e["key"].string() != kProductLabel || e["operator"].string() != "In") continue;
        names_product = true;
        for (JsonView v : e["values"].Elements()) products.push_back(v.string());
      }
      if (!names_product) return {};
    }
  }
  std::sort(products.begin(), products.end());
  products.erase(std::unique(products.begin(), products.end()), products.end());
  return {products.begin(), products.end()};
}

std::vector<WeightedTerm> ReadPreferredTerms(JsonView pod_spec) {
  std::vector<WeightedTerm> out;
  JsonView terms =
      pod_spec.At({"affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"});
  for (JsonView t : terms.Elements()) {
    JsonView preference = t["preference"];
    JsonView weight = t["weight"];
    if (!preference.is_object() || !weight.is_number_integer()) continue;
    WeightedTerm w;
    w.weight = static_cast<int32_t>(weight.integer());
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
  if (constraints.needs_dra_devices && node.dra_allocatable.empty()) return false;
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
