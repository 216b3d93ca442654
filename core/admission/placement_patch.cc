#include "core/admission/placement_patch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/admission/patch_path.h"
#include "core/kube/quantity.h"
#include "core/plan/placement.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = PatchPath;

constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
constexpr const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";

// The node-affinity values are written as JSON text (keys in the order nlohmann's map would
// give them): a placement writes several terms on every review.
void AppendRequirement(const NodeSelectorRequirement& r, std::string& out) {
  out += R"({"key":)";
  JsonPatch::AppendString(r.key, out);
  out += R"(,"operator":)";
  JsonPatch::AppendString(r.op, out);
  if (!r.values.empty()) {
    out += R"(,"values":[)";
    for (size_t i = 0; i < r.values.size(); ++i) {
      if (i > 0) out += ',';
      JsonPatch::AppendString(r.values[i], out);
    }
    out += ']';
  }
  out += '}';
}

// [requirement,...]
void AppendExpressions(const std::vector<const NodeSelectorRequirement*>& requirements,
                       std::string& out) {
  out += '[';
  for (size_t i = 0; i < requirements.size(); ++i) {
    if (i > 0) out += ',';
    AppendRequirement(*requirements[i], out);
  }
  out += ']';
}

std::vector<const NodeSelectorRequirement*> All(const std::vector<NodeSelectorRequirement>& list) {
  std::vector<const NodeSelectorRequirement*> out;
  for (const NodeSelectorRequirement& r : list) out.push_back(&r);
  return out;
}

// [{"matchExpressions":[...]}]: the one required term of a pod that has none.
void AppendOneTerm(const std::vector<NodeSelectorRequirement>& required, std::string& out) {
  out += R"([{"matchExpressions":)";
  AppendExpressions(All(required), out);
  out += "}]";
}

std::string OneTerm(const std::vector<NodeSelectorRequirement>& required) {
  std::string out;
  AppendOneTerm(required, out);
  return out;
}

void AppendPreferred(const PreferredTerm& t, std::string& out) {
  out += R"({"preference":{"matchExpressions":)";
  AppendExpressions(All(t.requirements), out);
  out += R"(},"weight":)";
  out += std::to_string(t.weight);
  out += '}';
}

// The same key, operator and set of values.
bool SameValues(std::vector<std::string> have, std::vector<std::string> want) {
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  return have == want;
}

bool SameRequirement(JsonView e, const NodeSelectorRequirement& r) {
  if (e["key"].string() != r.key || e["operator"].string() != r.op) return false;
  std::vector<std::string> have;
  for (JsonView v : e["values"].Elements()) {
    if (!v.is_string()) return false;
    have.emplace_back(v.string());
  }
  return SameValues(std::move(have), r.values);
}

bool HasRequirement(JsonView expressions, const NodeSelectorRequirement& r) {
  auto list = expressions.Elements();
  return std::any_of(list.begin(), list.end(), [&](JsonView e) { return SameRequirement(e, r); });
}

bool SameTerm(JsonView existing, const PreferredTerm& t) {
  JsonView weight = existing["weight"];
  if (!weight.is_number_integer() || weight.integer() != t.weight) return false;
  if (existing.At({"preference", "matchFields"}).size() != 0) return false;
  JsonView expressions = existing.At({"preference", "matchExpressions"});
  size_t size = expressions.size();
  return size == t.requirements.size() &&
         std::all_of(t.requirements.begin(), t.requirements.end(),
                     [&](const auto& r) { return HasRequirement(expressions, r); });
}

// SameTerm for a term this patch adds, as it will read once written.
bool SameTerm(const PreferredTerm& added, const PreferredTerm& t) {
  return added.weight == t.weight && added.requirements.size() == t.requirements.size() &&
         std::all_of(t.requirements.begin(), t.requirements.end(), [&](const auto& r) {
           return std::any_of(added.requirements.begin(), added.requirements.end(),
                              [&](const NodeSelectorRequirement& a) {
                                return a.key == r.key && a.op == r.op &&
                                       SameValues(a.values, r.values);
                              });
         });
}

// A term with no requirement matches no node; ANDing into it would make it match some.
bool IsEmptyTerm(JsonView term) {
  return term["matchExpressions"].size() == 0 && term["matchFields"].size() == 0;
}

void PatchRequired(JsonView node_affinity, const Pointer& at, const Decision& d, JsonPatch& patch) {
  JsonView required = node_affinity[kRequired];
  JsonView terms = required["nodeSelectorTerms"];
  if (!required.is_object()) {
    patch.AddText(at / kRequired, R"({"nodeSelectorTerms":)" + OneTerm(d.required) + "}");
    return;
  }
  if (terms.size() == 0) {
    patch.AddText(at / kRequired / "nodeSelectorTerms", OneTerm(d.required));
    return;
  }
  size_t i = 0;
  for (JsonView term : terms.Elements()) {
    Pointer term_at = at / kRequired / "nodeSelectorTerms" / i++;
    if (IsEmptyTerm(term)) continue;
    JsonView expressions = term["matchExpressions"];
    std::vector<const NodeSelectorRequirement*> missing;
    for (const NodeSelectorRequirement& r : d.required) {
      if (!HasRequirement(expressions, r)) missing.push_back(&r);
    }
    if (missing.empty()) continue;
    if (!expressions.is_array()) {
      std::string list;
      AppendExpressions(missing, list);
      patch.AddText(term_at / "matchExpressions", list);
      continue;
    }
    for (const NodeSelectorRequirement* r : missing) {
      std::string one;
      AppendRequirement(*r, one);
      patch.AddText(term_at / "matchExpressions" / "-", one);
    }
  }
}

// The terms of decision.preferred that `preferred` (the pod's list, or absent) lacks, once each.
std::vector<const PreferredTerm*> MissingPreferred(JsonView preferred, const Decision& d) {
  std::vector<const PreferredTerm*> missing;
  auto list = preferred.Elements();
  for (const PreferredTerm& t : d.preferred) {
    bool present = std::any_of(list.begin(), list.end(),
                               [&](JsonView existing) { return SameTerm(existing, t); });
    if (!present && std::none_of(missing.begin(), missing.end(),
                                 [&](const PreferredTerm* added) { return SameTerm(*added, t); })) {
      missing.push_back(&t);
    }
  }
  return missing;
}

// [term,...]
void AppendPreferredList(const std::vector<const PreferredTerm*>& terms, std::string& out) {
  out += '[';
  for (size_t i = 0; i < terms.size(); ++i) {
    if (i > 0) out += ',';
    AppendPreferred(*terms[i], out);
  }
  out += ']';
}

std::string PreferredList(const std::vector<const PreferredTerm*>& terms) {
  std::string out;
  AppendPreferredList(terms, out);
  return out;
}

void PatchPreferred(JsonView node_affinity, const Pointer& at, const Decision& d,
                    JsonPatch& patch) {
  JsonView preferred = node_affinity[kPreferred];
  std::vector<const PreferredTerm*> missing = MissingPreferred(preferred, d);
  if (missing.empty()) return;
  if (!preferred.is_array()) {
    patch.AddText(at / kPreferred, PreferredList(missing));
    return;
  }
  for (const PreferredTerm* t : missing) {
    std::string one;
    AppendPreferred(*t, one);
    patch.AddText(at / kPreferred / "-", one);
  }
}

void PatchNodeAffinity(JsonView spec, const Pointer& spec_at, const Decision& d, JsonPatch& patch) {
  if (d.required.empty() && d.preferred.empty()) return;
  JsonView affinity = spec["affinity"];
  JsonView node_affinity = affinity["nodeAffinity"];
  Pointer at = spec_at / "affinity" / "nodeAffinity";
  if (node_affinity.is_object()) {
    if (!d.required.empty()) PatchRequired(node_affinity, at, d, patch);
    if (!d.preferred.empty()) PatchPreferred(node_affinity, at, d, patch);
    return;
  }
  // No nodeAffinity yet: one operation creates it whole (and the affinity around it, when
  // that is missing too), written into one buffer.
  bool whole = !affinity.is_object();
  std::string value;
  value.reserve(256);
  if (whole) value += R"({"nodeAffinity":)";
  value += '{';
  if (!d.preferred.empty()) {
    value.append("\"").append(kPreferred).append("\":");
    AppendPreferredList(MissingPreferred({}, d), value);
  }
  if (!d.required.empty()) {
    if (value.back() != '{') value += ',';
    value.append("\"").append(kRequired).append(R"(":{"nodeSelectorTerms":)");
    AppendOneTerm(d.required, value);
    value += '}';
  }
  value += whole ? "}}" : "}";
  patch.AddText(whole ? spec_at / "affinity" : at, value);
}

// A toleration as JSON text, its keys in name order as nlohmann's map wrote them before.
void AppendToleration(const Toleration& t, std::string& out) {
  char separator = '{';
  auto field = [&](std::string_view key, std::string_view value) {
    out += separator;
    separator = ',';
    JsonPatch::AppendString(key, out);
    out += ':';
    JsonPatch::AppendString(value, out);
  };
  if (!t.effect.empty()) field("effect", t.effect);
  if (!t.key.empty()) field("key", t.key);
  field("operator", t.op.empty() ? "Equal" : t.op);
  if (!t.value.empty()) field("value", t.value);
  out += '}';
}

bool SameToleration(JsonView existing, const Toleration& t) {
  std::string_view op = existing["operator"].string();
  return existing["key"].string() == t.key && (op.empty() ? "Equal" : op) == t.op &&
         existing["value"].string() == t.value && existing["effect"].string() == t.effect;
}

// Adds the decision's tolerations the spec lacks: each appended to its list, or the list whole
// when the spec has none.
void PatchTolerations(JsonView spec, const Pointer& spec_at, const Decision& d, JsonPatch& patch) {
  if (d.tolerations.empty()) return;
  JsonView existing = spec["tolerations"];
  auto list = existing.Elements();
  std::vector<const Toleration*> missing;
  for (const Toleration& t : d.tolerations) {
    bool present =
        std::any_of(list.begin(), list.end(), [&](JsonView e) { return SameToleration(e, t); });
    if (!present) missing.push_back(&t);
  }
  if (missing.empty()) return;
  std::string value;
  if (!existing.is_array()) {
    char separator = '[';
    for (const Toleration* t : missing) {
      value += separator;
      separator = ',';
      AppendToleration(*t, value);
    }
    value += ']';
    patch.AddText(spec_at / "tolerations", value);
    return;
  }
  for (const Toleration* t : missing) {
    value.clear();
    AppendToleration(*t, value);
    patch.AddText(spec_at / "tolerations" / "-", value);
  }
}

bool AsksForGpus(JsonView container) {
  for (const char* section : {"limits", "requests"}) {
    for (const auto& [name, quantity] : container.At({"resources", section}).Members()) {
      if (IsManagedResource(name)) return true;
    }
  }
  return false;
}

// The containers that ask for an nvidia.com/ resource, with where each is.
std::vector<std::pair<Pointer, JsonView>> GpuContainers(JsonView spec,
                                                        const PodSpecLocation& where) {
  const Pointer spec_at(where.spec);
  std::vector<std::pair<Pointer, JsonView>> found;
  auto consider = [&](JsonView c, Pointer at) {
    if (c.is_object() && AsksForGpus(c)) found.emplace_back(std::move(at), c);
  };
  for (const char* field : {"initContainers", "containers"}) {
    size_t i = 0;
    for (JsonView c : spec[field].Elements()) consider(c, spec_at / field / i++);
  }
  if (!where.gpu_container.empty()) {
    consider(spec[where.gpu_container], spec_at / where.gpu_container);
  }
  return found;
}

// Adds each of the decision's variables to every GPU container that sets none of that name.
void PatchEnv(JsonView spec, const PodSpecLocation& where, const Decision& d, JsonPatch& patch) {
  if (d.env.empty()) return;
  for (const auto& [at, container] : GpuContainers(spec, where)) {
    JsonView env = container["env"];
    auto list = env.Elements();
    json missing = json::array();
    for (const std::pair<std::string, std::string>& variable : d.env) {
      bool set = std::any_of(list.begin(), list.end(),
                             [&](JsonView e) { return e["name"].string() == variable.first; });
      if (!set) missing.push_back({{"name", variable.first}, {"value", variable.second}});
    }
    if (missing.empty()) continue;
    if (!env.is_array()) {
      patch.Add(at / "env", std::move(missing));
      continue;
    }
    for (json& variable : missing) patch.Add(at / "env" / "-", std::move(variable));
  }
}

// The container's `section`.`resource` in thousandths; nullopt when it sets none (or an
// unreadable one, which the apiserver refuses anyway).
std::optional<int64_t> QuantityOf(JsonView container, const char* section,
                                  std::string_view resource) {
  JsonView q = container.At({"resources", section})[resource];
  if (!q.present()) return std::nullopt;
  auto milli = q.is_string() ? ParseQuantityMilli(q.string()) : ParseQuantityMilli(q.Dump());
  if (!milli.ok()) return std::nullopt;
  return milli.value();
}

// Adds the decision's cpu and memory to every GPU container that sets none of that quantity,
// keeping each request at most its limit: a request above the container's limit (or the
// defaulted one) and a limit below its request are left out.
void PatchResourceDefaults(JsonView spec, const PodSpecLocation& where, const Decision& d,
                           JsonPatch& patch) {
  if (d.resource_defaults.empty()) return;
  for (const auto& found : GpuContainers(spec, where)) {
    const Pointer& at = found.first;
    const JsonView container = found.second;  // not a binding: the lambda below reads it
    json added = json::object();  // section -> resource -> quantity
    auto bound = [&](const char* section, const std::string& resource) -> std::optional<int64_t> {
      if (auto own = QuantityOf(container, section, resource)) return own;
      for (const ResourceDefault& q : d.resource_defaults) {
        if (q.section == section && q.resource == resource) return q.milli;
      }
      return std::nullopt;
    };
    for (const ResourceDefault& q : d.resource_defaults) {
      if (QuantityOf(container, q.section.c_str(), q.resource)) continue;
      bool request = q.section == "requests";
      auto other = bound(request ? "limits" : "requests", q.resource);
      if (other && (request ? q.milli > *other : q.milli < *other)) continue;
      added[q.section][q.resource] = q.quantity;
    }
    if (added.empty()) continue;
    JsonView resources = container["resources"];
    if (!resources.is_object()) {
      patch.Add(at / "resources", std::move(added));
      continue;
    }
    for (auto& [section, quantities] : added.items()) {
      if (!resources[section].is_object()) {
        patch.Add(at / "resources" / section, quantities);
        continue;
      }
      for (auto& [resource, quantity] : quantities.items()) {
        patch.Add(at / "resources" / section / resource, quantity);
      }
    }
  }
}

void PatchShm(JsonView spec, const PodSpecLocation& where, const Decision& d, JsonPatch& patch) {
  if (d.shm_size.empty()) return;
  const Pointer spec_at(where.spec);
  std::vector<std::pair<Pointer, JsonView>> lacking;  // GPU containers without /dev/shm
  for (auto& [at, container] : GpuContainers(spec, where)) {
    if (!MountsShm(container)) lacking.emplace_back(std::move(at), container);
  }
  if (lacking.empty()) return;
  JsonView volumes = spec["volumes"];
  auto volume_list = volumes.Elements();
  bool has_volume = std::any_of(volume_list.begin(), volume_list.end(),
                                [](JsonView v) { return v["name"].string() == kShmVolumeName; });
  if (!has_volume) {
    json volume = {{"name", kShmVolumeName},
                   {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", d.shm_size}}}};
    if (volumes.is_array()) {
      patch.Add(spec_at / "volumes" / "-", std::move(volume));
    } else {
      patch.Add(spec_at / "volumes", json::array({std::move(volume)}));
    }
  }
  json mount = {{"name", kShmVolumeName}, {"mountPath", kShmPath}};
  for (const auto& [at, container] : lacking) {
    if (container["volumeMounts"].is_array()) {
      patch.Add(at / "volumeMounts" / "-", mount);
    } else {
      patch.Add(at / "volumeMounts", json::array({mount}));
    }
  }
}

}  // namespace

void AppendPlacementPatch(JsonView object, const PodSpecLocation& where, const Decision& decision,
                          JsonPatch& patch) {
  JsonView spec = object.AtPointer(where.spec);
  if (!spec.is_object()) return;
  const Pointer spec_at(where.spec);
  PatchNodeAffinity(spec, spec_at, decision, patch);
  PatchTolerations(spec, spec_at, decision, patch);
  PatchShm(spec, where, decision, patch);
  PatchEnv(spec, where, decision, patch);
  PatchResourceDefaults(spec, where, decision, patch);
}

}  // namespace gpuadmit
