#include "core/admission/placement_patch.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "core/admission/patch_path.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = PatchPath;

constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
constexpr const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
constexpr std::string_view kShmPath = "/dev/shm";

json RequirementJson(const NodeSelectorRequirement& r) {
  json j = {{"key", r.key}, {"operator", r.op}};
  if (!r.values.empty()) j["values"] = r.values;
  return j;
}

json Expressions(const std::vector<NodeSelectorRequirement>& requirements) {
  json list = json::array();
  std::transform(requirements.begin(), requirements.end(), std::back_inserter(list),
                 RequirementJson);
  return list;
}

// One "add" per element of `values`, appended to the list at `list` ("/-").
void AppendEach(const json& values, const Pointer& list, JsonPatch& patch) {
  for (const json& v : values) patch.Add(list / "-", v);
}

json PreferredJson(const PreferredTerm& t) {
  return {{"weight", t.weight},
          {"preference", {{"matchExpressions", Expressions(t.requirements)}}}};
}

// The same key, operator and set of values.
bool SameRequirement(JsonView e, const NodeSelectorRequirement& r) {
  if (e["key"].string() != r.key || e["operator"].string() != r.op) return false;
  std::vector<std::string> have;
  for (JsonView v : e["values"].Elements()) {
    if (!v.is_string()) return false;
    have.emplace_back(v.string());
  }
  std::vector<std::string> want = r.values;
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  return have == want;
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

// A term with no requirement matches no node; ANDing into it would make it match some.
bool IsEmptyTerm(JsonView term) {
  return term["matchExpressions"].size() == 0 && term["matchFields"].size() == 0;
}

void PatchRequired(JsonView node_affinity, const Pointer& at, const Decision& d, JsonPatch& patch) {
  JsonView required = node_affinity[kRequired];
  JsonView terms = required["nodeSelectorTerms"];
  json one_term = json::array({{{"matchExpressions", Expressions(d.required)}}});
  if (!required.is_object()) {
    patch.Add(at / kRequired, {{"nodeSelectorTerms", std::move(one_term)}});
    return;
  }
  if (terms.size() == 0) {
    patch.Add(at / kRequired / "nodeSelectorTerms", std::move(one_term));
    return;
  }
  size_t i = 0;
  for (JsonView term : terms.Elements()) {
    Pointer term_at = at / kRequired / "nodeSelectorTerms" / i++;
    if (IsEmptyTerm(term)) continue;
    JsonView expressions = term["matchExpressions"];
    json missing = json::array();
    for (const NodeSelectorRequirement& r : d.required) {
      if (!HasRequirement(expressions, r)) missing.push_back(RequirementJson(r));
    }
    if (missing.empty()) continue;
    if (!expressions.is_array()) {
      patch.Add(term_at / "matchExpressions", std::move(missing));
      continue;
    }
    AppendEach(missing, term_at / "matchExpressions", patch);
  }
}

// The terms of decision.preferred that `preferred` (the pod's list, or absent) lacks, once each.
json MissingPreferred(JsonView preferred, const Decision& d) {
  json missing = json::array();
  auto list = preferred.Elements();
  for (const PreferredTerm& t : d.preferred) {
    auto same = [&](JsonView existing) { return SameTerm(existing, t); };
    bool present = std::any_of(list.begin(), list.end(), same);
    if (!present && std::none_of(missing.begin(), missing.end(), same)) {
      missing.push_back(PreferredJson(t));
    }
  }
  return missing;
}

void PatchPreferred(JsonView node_affinity, const Pointer& at, const Decision& d,
                    JsonPatch& patch) {
  JsonView preferred = node_affinity[kPreferred];
  json missing = MissingPreferred(preferred, d);
  if (missing.empty()) return;
  if (!preferred.is_array()) {
    patch.Add(at / kPreferred, std::move(missing));
    return;
  }
  AppendEach(missing, at / kPreferred, patch);
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
  // No nodeAffinity yet: one operation creates it whole.
  json value = json::object();
  if (!d.required.empty()) {
    value[kRequired] = {
        {"nodeSelectorTerms", json::array({{{"matchExpressions", Expressions(d.required)}}})}};
  }
  if (!d.preferred.empty()) value[kPreferred] = MissingPreferred(JsonView(), d);
  if (affinity.is_object()) {
    patch.Add(at, std::move(value));
  } else {
    patch.Add(spec_at / "affinity", {{"nodeAffinity", std::move(value)}});
  }
}

json TolerationJson(const Toleration& t) {
  json j = json::object();
  if (!t.key.empty()) j["key"] = t.key;
  j["operator"] = t.op.empty() ? "Equal" : t.op;
  if (!t.value.empty()) j["value"] = t.value;
  if (!t.effect.empty()) j["effect"] = t.effect;
  return j;
}

bool SameToleration(JsonView existing, const Toleration& t) {
  std::string_view op = existing["operator"].string();
  return existing["key"].string() == t.key && (op.empty() ? "Equal" : op) == t.op &&
         existing["value"].string() == t.value && existing["effect"].string() == t.effect;
}

void PatchTolerations(JsonView spec, const Pointer& spec_at, const Decision& d, JsonPatch& patch) {
  JsonView existing = spec["tolerations"];
  auto list = existing.Elements();
  json missing = json::array();
  for (const Toleration& t : d.tolerations) {
    bool present =
        std::any_of(list.begin(), list.end(), [&](JsonView e) { return SameToleration(e, t); });
    if (!present) missing.push_back(TolerationJson(t));
  }
  if (missing.empty()) return;
  if (!existing.is_array()) {
    patch.Add(spec_at / "tolerations", std::move(missing));
    return;
  }
  AppendEach(missing, spec_at / "tolerations", patch);
}

bool AsksForGpus(JsonView container) {
  for (const char* section : {"limits", "requests"}) {
    for (const auto& [name, quantity] : container.At({"resources", section}).Members()) {
      if (name.starts_with("nvidia.com/")) return true;
    }
  }
  return false;
}

bool MountsShm(JsonView container) {
  auto mounts = container["volumeMounts"].Elements();
  return std::any_of(mounts.begin(), mounts.end(),
                     [](JsonView m) { return m["mountPath"].string() == kShmPath; });
}

void PatchShm(JsonView spec, const PodSpecLocation& where, const Decision& d, JsonPatch& patch) {
  if (d.shm_size.empty()) return;
  const Pointer spec_at(where.spec);
  std::vector<std::pair<Pointer, JsonView>> lacking;  // GPU containers without /dev/shm
  auto consider = [&](JsonView c, Pointer at) {
    if (c.is_object() && AsksForGpus(c) && !MountsShm(c)) lacking.emplace_back(std::move(at), c);
  };
  for (const char* field : {"initContainers", "containers"}) {
    size_t i = 0;
    for (JsonView c : spec[field].Elements()) consider(c, spec_at / field / i++);
  }
  if (!where.gpu_container.empty()) {
    consider(spec[where.gpu_container], spec_at / where.gpu_container);
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
}

}  // namespace gpuadmit
