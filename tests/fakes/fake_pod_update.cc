#include "tests/fakes/fake_pod_update.h"

#include <initializer_list>
#include <set>
#include <utility>
#include <vector>

#include "tests/fakes/kube_status.h"

namespace gpuadmit::testing {
namespace {

using nlohmann::json;

// As ValidatePodUpdate words its catch-all (Kubernetes 1.31); the apiserver appends a diff of
// the two specs, which is left out here.
constexpr char kOnlyMutableFields[] =
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";
constexpr char kTermsField[] =
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";

// One of ValidatePodUpdate's field errors.
struct FieldError {
  std::string field;  // "spec.nodeSelector"
  bool invalid;       // Invalid (with a value), else Forbidden
  json value;         // an Invalid's value
  std::string detail;

  // As field.Error's ErrorBody: "Forbidden: <detail>" or "Invalid value: <value>: <detail>".
  std::string Body() const {
    return invalid ? "Invalid value: " + value.dump() + ": " + detail : "Forbidden: " + detail;
  }
};
using FieldErrors = std::vector<FieldError>;

// The value at `path`; null when a step is missing or not an object.
const json& Lookup(const json& object, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

// Sets `path` to `value`, creating parents (over any that are not objects); a null `value`
// removes the key instead.
void Assign(json& object, std::initializer_list<const char*> path, const json& value) {
  json* at = &object;
  const char* const* last = path.end() - 1;
  for (const char* const* key = path.begin(); key != last; ++key) {
    if (value.is_null() && (!at->is_object() || !at->contains(*key))) return;
    if (!at->is_object()) *at = json::object();
    at = &(*at)[*key];
  }
  if (value.is_null()) {
    if (at->is_object()) at->erase(*last);
    return;
  }
  if (!at->is_object()) *at = json::object();
  (*at)[*last] = value;
}

std::string StringAt(const json& object, std::initializer_list<const char*> path) {
  const json& at = Lookup(object, path);
  return at.is_string() ? at.get<std::string>() : "";
}

// The array at `key`, or an empty one.
json ListAt(const json& object, const char* key) {
  const json& at = Lookup(object, {key});
  return at.is_array() ? at : json::array();
}

bool IsEmpty(const json& v) { return v.is_null() || (v.is_structured() && v.empty()); }

// `v` without null, [] and {} members, at any depth; null when nothing is left.
json Pruned(const json& v) {
  json out = v;
  if (v.is_array()) {
    for (json& e : out) e = Pruned(e);
  } else if (v.is_object()) {
    out = json::object();
    for (const auto& [key, e] : v.items()) {
      json p = Pruned(e);
      if (!IsEmpty(p)) out[key] = std::move(p);
    }
  }
  return IsEmpty(out) ? json() : out;
}

// The apiserver's semantic equality, as far as JSON shows it: an unset field, null, an empty list
// and an empty map are alike.
bool SemanticEqual(const json& a, const json& b) { return Pruned(a) == Pruned(b); }

// Each existing toleration must still be there, its tolerationSeconds aside.
void CheckTolerations(const json& new_spec, const json& old_spec, FieldErrors& errors) {
  json added = ListAt(new_spec, "tolerations");
  for (json old : ListAt(old_spec, "tolerations")) {
    bool kept = false;
    for (const json& t : added) {
      Assign(old, {"tolerationSeconds"}, Lookup(t, {"tolerationSeconds"}));
      kept = kept || SemanticEqual(old, t);
    }
    if (!kept) {
      errors.push_back({"spec.tolerations", false, nullptr,
                        "existing toleration can not be modified except its tolerationSeconds"});
      return;
    }
  }
}

// Scheduling gates may only be removed (KEP-3521).
void CheckGates(const json& new_spec, const json& old_spec, FieldErrors& errors) {
  std::set<std::string> old_names;
  for (const json& gate : ListAt(old_spec, "schedulingGates")) {
    old_names.insert(StringAt(gate, {"name"}));
  }
  json gates = ListAt(new_spec, "schedulingGates");
  for (size_t i = 0; i < gates.size(); ++i) {
    std::string name = StringAt(gates[i], {"name"});
    if (old_names.count(name) != 0) continue;
    errors.push_back({"spec.schedulingGates[" + std::to_string(i) + "].name", false, nullptr,
                      "only deletion is allowed, but found new scheduling gate '" + name + "'"});
  }
}

// A gated pod's nodeSelector may gain entries only.
void CheckNodeSelector(const json& new_selector, const json& old_selector, FieldErrors& errors) {
  if (!old_selector.is_object()) return;
  for (const auto& [key, value] : old_selector.items()) {
    if (Lookup(new_selector, {key.c_str()}) != value) {
      errors.push_back({"spec.nodeSelector", true, new_selector,
                        "only additions to spec.nodeSelector are allowed (no mutations or "
                        "deletions)"});
      return;
    }
  }
}

// Whether `new_term` keeps `old_term`'s requirements, in order, as a prefix of its own.
bool OnlyAdditions(const json& new_term, const json& old_term) {
  for (const char* key : {"matchExpressions", "matchFields"}) {
    json olds = ListAt(old_term, key);
    json news = ListAt(new_term, key);
    if (olds.size() > news.size()) return false;
    for (size_t i = 0; i < olds.size(); ++i) {
      if (!SemanticEqual(olds[i], news[i])) return false;
    }
  }
  return true;
}

// A gated pod's nodeAffinity may change freely, but non-empty required terms keep their number
// and may only gain requirements (KEP-3838). Preferred terms are not checked.
void CheckNodeAffinity(const json& new_affinity, const json& old_affinity, FieldErrors& errors) {
  const json& old_required =
      Lookup(old_affinity, {"requiredDuringSchedulingIgnoredDuringExecution"});
  if (old_required.is_null()) return;
  json old_terms = ListAt(old_required, "nodeSelectorTerms");
  json new_terms = ListAt(Lookup(new_affinity, {"requiredDuringSchedulingIgnoredDuringExecution"}),
                          "nodeSelectorTerms");
  if (!old_terms.empty() && old_terms.size() != new_terms.size()) {
    errors.push_back({kTermsField, true, new_terms,
                      "no additions/deletions to non-empty NodeSelectorTerms list are allowed"});
    return;
  }
  for (size_t i = 0; i < old_terms.size(); ++i) {
    if (OnlyAdditions(new_terms[i], old_terms[i])) continue;
    errors.push_back(
        {std::string(kTermsField) + "[" + std::to_string(i) + "]", true, new_terms[i],
         "only additions are allowed (no mutations or deletions) to NodeSelectorTerms " +
             old_terms[i].dump()});
  }
}

// ValidatePodUpdate's spec rules: the specific checks, then the new spec with every field it may
// change set back to the old one's (munged) must equal the old spec.
FieldErrors ValidateSpecUpdate(const json& new_spec, const json& old_spec) {
  FieldErrors errors;
  CheckTolerations(new_spec, old_spec, errors);
  CheckGates(new_spec, old_spec, errors);
  if (SemanticEqual(new_spec, old_spec)) return errors;

  json munged = new_spec.is_object() ? new_spec : json::object();
  for (const char* list : {"containers", "initContainers"}) {
    json olds = ListAt(old_spec, list);
    auto news = munged.find(list);
    if (news == munged.end() || !news->is_array()) continue;
    for (size_t i = 0; i < news->size() && i < olds.size(); ++i) {
      if ((*news)[i].is_object()) Assign((*news)[i], {"image"}, Lookup(olds[i], {"image"}));
    }
  }
  for (const char* field : {"activeDeadlineSeconds", "schedulingGates", "tolerations"}) {
    Assign(munged, {field}, Lookup(old_spec, {field}));
  }
  if (!ListAt(old_spec, "schedulingGates").empty()) {
    const json& old_selector = Lookup(old_spec, {"nodeSelector"});
    if (!SemanticEqual(Lookup(munged, {"nodeSelector"}), old_selector)) {
      CheckNodeSelector(Lookup(munged, {"nodeSelector"}), old_selector, errors);
      Assign(munged, {"nodeSelector"}, old_selector);
    }
    const json& old_affinity = Lookup(old_spec, {"affinity", "nodeAffinity"});
    if (!SemanticEqual(Lookup(munged, {"affinity", "nodeAffinity"}), old_affinity)) {
      CheckNodeAffinity(Lookup(munged, {"affinity", "nodeAffinity"}), old_affinity, errors);
      Assign(munged, {"affinity", "nodeAffinity"}, old_affinity);
    }
  }
  if (!SemanticEqual(munged, old_spec))
    errors.push_back({"spec", false, nullptr, kOnlyMutableFields});
  return errors;
}

// The 422 Invalid Status for `errors` on the pod `name`.
PodUpdate Invalid(const std::string& name, const FieldErrors& errors) {
  std::string list;
  json causes = json::array();
  for (const FieldError& e : errors) {
    list += (list.empty() ? "" : ", ") + e.field + ": " + e.Body();
    causes.push_back({{"reason", e.invalid ? "FieldValueInvalid" : "FieldValueForbidden"},
                      {"message", e.Body()},
                      {"field", e.field}});
  }
  if (errors.size() > 1) list = "[" + list + "]";
  return {422, KubeStatus(422, "Invalid", "Pod \"" + name + "\" is invalid: " + list,
                          {{"name", name}, {"kind", "Pod"}, {"causes", causes}})};
}

PodUpdate BadRequest(const std::string& message) {
  return {400, KubeStatus(400, "BadRequest", message)};
}

}  // namespace

PodUpdate MergePatchPod(const json& stored, const std::string& patch_body) {
  const std::string name = StringAt(stored, {"metadata", "name"});
  json patch = json::parse(patch_body, nullptr, false);
  if (patch.is_discarded()) return BadRequest("error decoding patch: the body is not JSON");
  if (!patch.is_object()) return BadRequest("error decoding patch: not a JSON object");
  json pod = stored;
  pod.merge_patch(patch);
  const std::string patched_name = StringAt(pod, {"metadata", "name"});
  if (patched_name != name) {
    return BadRequest("the name of the object (" + patched_name +
                      ") does not match the name on the URL (" + name + ")");
  }
  if (StringAt(pod, {"metadata", "namespace"}) != StringAt(stored, {"metadata", "namespace"})) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  const json& stored_version = Lookup(stored, {"metadata", "resourceVersion"});
  std::string precondition = StringAt(pod, {"metadata", "resourceVersion"});
  if (!precondition.empty() && precondition != StringAt(stored, {"metadata", "resourceVersion"})) {
    return {409, KubeStatus(409, "Conflict",
                            "Operation cannot be fulfilled on pods \"" + name +
                                "\": the object has been modified; please apply your changes to "
                                "the latest version and try again",
                            {{"name", name}, {"kind", "pods"}})};
  }
  Assign(pod, {"metadata", "resourceVersion"}, stored_version);
  Assign(pod, {"status"}, Lookup(stored, {"status"}));  // the pod strategy's PrepareForUpdate

  FieldErrors errors = ValidateSpecUpdate(Lookup(pod, {"spec"}), Lookup(stored, {"spec"}));
  if (!errors.empty()) return Invalid(name, errors);
  bool changed = pod != stored;
  return {200, std::move(pod), changed};
}

}  // namespace gpuadmit::testing
