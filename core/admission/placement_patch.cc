#include "core/admission/placement_patch.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "core/admission/patch_path.h"
#include "core/json/json_fields.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = PatchPath;

constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
constexpr const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
constexpr std::string_view kShmPath = "/dev/shm";

json Add(const Pointer& path, json value) { return PatchOperation("add", path, std::move(value)); }

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
void AppendEach(json& values, const Pointer& list, json& ops) {
  std::transform(values.begin(), values.end(), std::back_inserter(ops),
                 [&](json& v) { return Add(list / "-", std::move(v)); });
}

json PreferredJson(const PreferredTerm& t) {
  return {{"weight", t.weight},
          {"preference", {{"matchExpressions", Expressions(t.requirements)}}}};
}

// The same key, operator and set of values.
bool SameRequirement(const json& e, const NodeSelectorRequirement& r) {
  if (StringAt(e, {"key"}) != r.key || StringAt(e, {"operator"}) != r.op) return false;
  const json& values = At(e, {"values"});
  std::vector<std::string> have;
  if (values.is_array()) {
    for (const json& v : values) {
      if (!v.is_string()) return false;
      have.push_back(v.get<std::string>());
    }
  }
  std::vector<std::string> want = r.values;
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  return have == want;
}

bool HasRequirement(const json& expressions, const NodeSelectorRequirement& r) {
  return expressions.is_array() &&
         std::any_of(expressions.begin(), expressions.end(),
                     [&](const json& e) { return SameRequirement(e, r); });
}

bool SameTerm(const json& existing, const PreferredTerm& t) {
  const json& weight = At(existing, {"weight"});
  if (!weight.is_number_integer() || weight.get<int64_t>() != t.weight) return false;
  const json& fields = At(existing, {"preference", "matchFields"});
  if (fields.is_array() && !fields.empty()) return false;
  const json& expressions = At(existing, {"preference", "matchExpressions"});
  size_t size = expressions.is_array() ? expressions.size() : 0;
  return size == t.requirements.size() &&
         std::all_of(t.requirements.begin(), t.requirements.end(),
                     [&](const auto& r) { return HasRequirement(expressions, r); });
}

// A term with no requirement matches no node; ANDing into it would make it match some.
bool IsEmptyTerm(const json& term) {
  auto empty = [&](const char* field) {
    const json& list = At(term, {field});
    return !list.is_array() || list.empty();
  };
  return empty("matchExpressions") && empty("matchFields");
}

void PatchRequired(const json& node_affinity, const Pointer& at, const Decision& d, json& ops) {
  const json& required = At(node_affinity, {kRequired});
  const json& terms = At(required, {"nodeSelectorTerms"});
  json one_term = json::array({{{"matchExpressions", Expressions(d.required)}}});
  if (!required.is_object()) {
    ops.push_back(Add(at / kRequired, {{"nodeSelectorTerms", std::move(one_term)}}));
    return;
  }
  if (!terms.is_array() || terms.empty()) {
    ops.push_back(Add(at / kRequired / "nodeSelectorTerms", std::move(one_term)));
    return;
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    const json& term = terms[i];
    if (IsEmptyTerm(term)) continue;
    const json& expressions = At(term, {"matchExpressions"});
    Pointer term_at = at / kRequired / "nodeSelectorTerms" / i;
    json missing = json::array();
    for (const NodeSelectorRequirement& r : d.required) {
      if (!HasRequirement(expressions, r)) missing.push_back(RequirementJson(r));
    }
    if (missing.empty()) continue;
    if (!expressions.is_array()) {
      ops.push_back(Add(term_at / "matchExpressions", std::move(missing)));
      continue;
    }
    AppendEach(missing, term_at / "matchExpressions", ops);
  }
}

// The terms of decision.preferred that `preferred` (the pod's list, or null) lacks, once each.
json MissingPreferred(const json& preferred, const Decision& d) {
  json missing = json::array();
  for (const PreferredTerm& t : d.preferred) {
    auto same = [&](const json& existing) { return SameTerm(existing, t); };
    bool present = preferred.is_array() && std::any_of(preferred.begin(), preferred.end(), same);
    if (!present && std::none_of(missing.begin(), missing.end(), same)) {
      missing.push_back(PreferredJson(t));
    }
  }
  return missing;
}

void PatchPreferred(const json& node_affinity, const Pointer& at, const Decision& d, json& ops) {
  const json& preferred = At(node_affinity, {kPreferred});
  json missing = MissingPreferred(preferred, d);
  if (missing.empty()) return;
  if (!preferred.is_array()) {
    ops.push_back(Add(at / kPreferred, std::move(missing)));
    return;
  }
  AppendEach(missing, at / kPreferred, ops);
}

void PatchNodeAffinity(const json& spec, const Pointer& spec_at, const Decision& d, json& ops) {
  if (d.required.empty() && d.preferred.empty()) return;
  const json& affinity = At(spec, {"affinity"});
  const json& node_affinity = At(affinity, {"nodeAffinity"});
  Pointer at = spec_at / "affinity" / "nodeAffinity";
  if (node_affinity.is_object()) {
    if (!d.required.empty()) PatchRequired(node_affinity, at, d, ops);
    if (!d.preferred.empty()) PatchPreferred(node_affinity, at, d, ops);
    return;
  }
  // No nodeAffinity yet: one operation creates it whole.
  json value = json::object();
  if (!d.required.empty()) {
    value[kRequired] = {
        {"nodeSelectorTerms", json::array({{{"matchExpressions", Expressions(d.required)}}})}};
  }
  if (!d.preferred.empty()) value[kPreferred] = MissingPreferred(json(), d);
  if (affinity.is_object()) {
    ops.push_back(Add(at, std::move(value)));
  } else {
    ops.push_back(Add(spec_at / "affinity", {{"nodeAffinity", std::move(value)}}));
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

bool SameToleration(const json& existing, const Toleration& t) {
  std::string op = StringAt(existing, {"operator"});
  return StringAt(existing, {"key"}) == t.key && (op.empty() ? "Equal" : op) == t.op &&
         StringAt(existing, {"value"}) == t.value && StringAt(existing, {"effect"}) == t.effect;
}

void PatchTolerations(const json& spec, const Pointer& spec_at, const Decision& d, json& ops) {
  const json& existing = At(spec, {"tolerations"});
  json missing = json::array();
  for (const Toleration& t : d.tolerations) {
    bool present =
        existing.is_array() && std::any_of(existing.begin(), existing.end(),
                                           [&](const json& e) { return SameToleration(e, t); });
    if (!present) missing.push_back(TolerationJson(t));
  }
  if (missing.empty()) return;
  if (!existing.is_array()) {
    ops.push_back(Add(spec_at / "tolerations", std::move(missing)));
    return;
  }
  AppendEach(missing, spec_at / "tolerations", ops);
}

bool AsksForGpus(const json& container) {
  for (const char* section : {"limits", "requests"}) {
    const json& list = At(container, {"resources", section});
    if (!list.is_object()) continue;
    for (const auto& [name, quantity] : list.items()) {
      if (name.starts_with("nvidia.com/")) return true;
    }
  }
  return false;
}

bool MountsShm(const json& container) {
  const json& mounts = At(container, {"volumeMounts"});
  return mounts.is_array() && std::any_of(mounts.begin(), mounts.end(), [](const json& m) {
           return StringAt(m, {"mountPath"}) == kShmPath;
         });
}

void PatchShm(const json& spec, const PodSpecLocation& where, const Decision& d, json& ops) {
  if (d.shm_size.empty()) return;
  const Pointer spec_at(where.spec);
  std::vector<std::pair<Pointer, const json*>> lacking;  // GPU containers without /dev/shm
  auto consider = [&](const json& c, Pointer at) {
    if (c.is_object() && AsksForGpus(c) && !MountsShm(c)) lacking.emplace_back(std::move(at), &c);
  };
  for (const char* field : {"initContainers", "containers"}) {
    const json& list = At(spec, {field});
    if (!list.is_array()) continue;
    for (size_t i = 0; i < list.size(); ++i) consider(list[i], spec_at / field / i);
  }
  if (!where.gpu_container.empty()) {
    consider(At(spec, {where.gpu_container}), spec_at / where.gpu_container);
  }
  if (lacking.empty()) return;
  const json& volumes = At(spec, {"volumes"});
  bool has_volume =
      volumes.is_array() && std::any_of(volumes.begin(), volumes.end(), [](const json& v) {
        return StringAt(v, {"name"}) == kShmVolumeName;
      });
  if (!has_volume) {
    json volume = {{"name", kShmVolumeName},
                   {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", d.shm_size}}}};
    if (volumes.is_array()) {
      ops.push_back(Add(spec_at / "volumes" / "-", std::move(volume)));
    } else {
      ops.push_back(Add(spec_at / "volumes", json::array({std::move(volume)})));
    }
  }
  json mount = {{"name", kShmVolumeName}, {"mountPath", kShmPath}};
  for (const auto& [at, container] : lacking) {
    if (At(*container, {"volumeMounts"}).is_array()) {
      ops.push_back(Add(at / "volumeMounts" / "-", mount));
    } else {
      ops.push_back(Add(at / "volumeMounts", json::array({mount})));
    }
  }
}

}  // namespace

void AppendPlacementPatch(const json& object, const PodSpecLocation& where,
                          const Decision& decision, json& ops) {
  if (!object.contains(where.spec)) return;
  const json& spec = object.at(where.spec);
  if (!spec.is_object()) return;
  const Pointer spec_at(where.spec);
  PatchNodeAffinity(spec, spec_at, decision, ops);
  PatchTolerations(spec, spec_at, decision, ops);
  PatchShm(spec, where, decision, ops);
}

}  // namespace gpuadmit
