#include "core/workload.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = json::json_pointer;

struct KnownKind {
  std::string_view group;
  std::string_view kind;
  std::string_view template_path;  // "" for a Pod: the spec is the object's own
};

// extensions/v1beta1 is how pre-1.16 apiservers sent Deployments, DaemonSets and ReplicaSets.
constexpr KnownKind kKnownKinds[] = {
    {"", "Pod", ""},
    {"apps", "Deployment", "/spec/template"},
    {"extensions", "Deployment", "/spec/template"},
    {"apps", "ReplicaSet", "/spec/template"},
    {"extensions", "ReplicaSet", "/spec/template"},
    {"apps", "StatefulSet", "/spec/template"},
    {"apps", "DaemonSet", "/spec/template"},
    {"extensions", "DaemonSet", "/spec/template"},
    {"batch", "Job", "/spec/template"},
    {"batch", "CronJob", "/spec/jobTemplate/spec/template"},
};

const KnownKind* Lookup(const GroupVersionKind& kind) {
  const auto* it = std::find_if(
      std::begin(kKnownKinds), std::end(kKnownKinds),
      [&](const KnownKind& k) { return k.group == kind.group && k.kind == kind.kind; });
  return it == std::end(kKnownKinds) ? nullptr : it;
}

}  // namespace

bool IsKnownKind(const GroupVersionKind& kind) { return Lookup(kind) != nullptr; }

Result<std::vector<PodSpecLocation>> FindPodSpecs(const GroupVersionKind& kind,
                                                  const json& object) {
  const KnownKind* known = Lookup(kind);
  if (known == nullptr) return std::vector<PodSpecLocation>{};
  if (!object.is_object()) return Error{"the " + kind.kind + " object is not a JSON object"};

  PodSpecLocation at;
  Pointer base(std::string(known->template_path));
  at.spec = base / "spec";
  at.metadata = base / "metadata";
  at.is_pod = known->template_path.empty();
  if (!object.contains(at.spec)) return std::vector<PodSpecLocation>{};
  if (!object.at(at.spec).is_object()) {
    return Error{kind.kind + " " + at.spec.to_string() + " is not an object"};
  }
  return std::vector<PodSpecLocation>{std::move(at)};
}

}  // namespace gpuadmit
