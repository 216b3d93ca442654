#include "core/kube/workload.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>

#include "core/text/append.h"

namespace gpuadmit {
namespace {

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

Result<std::vector<PodSpecLocation>> FindCustomPodSpecs(const GroupVersionKind& kind,
                                                        JsonView object,
                                                        const CustomWorkload& workload) {
  // ParsePolicy rejects a pointer that is not one, but a Policy built in code may carry anything.
  if (!IsJsonPointer(workload.metadata)) {
    return Error{"policy workload " + kind.kind + ": bad metadata pointer"};
  }
  std::vector<PodSpecLocation> found;
  for (const std::string& path : workload.pod_specs) {
    if (!IsJsonPointer(path)) {
      return Error{"policy workload " + kind.kind + ": bad pod spec pointer " + path};
    }
    JsonView value = object.AtPointer(path);
    if (!value.present()) continue;
    if (!value.is_object()) {
      return Error{kind.kind + " " + path + " is not an object"};
    }
    PodSpecLocation at;
    at.spec = path;
    at.metadata = workload.metadata;
    at.gpu_container = workload.gpu_container;
    at.pin_node = workload.pin_node;
    found.push_back(std::move(at));
  }
  return found;
}

}  // namespace

std::optional<std::string_view> BuiltInTemplatePath(const GroupVersionKind& kind) {
  const KnownKind* known = Lookup(kind);
  if (known == nullptr) return std::nullopt;
  return known->template_path;
}

const CustomWorkload* CustomWorkloadOf(const GroupVersionKind& kind,
                                       std::span<const CustomWorkload> custom) {
  auto it = std::find_if(custom.begin(), custom.end(), [&](const CustomWorkload& w) {
    return w.group == kind.group && w.kind == kind.kind;
  });
  return it == custom.end() ? nullptr : &*it;
}

bool IsKnownKind(const GroupVersionKind& kind, std::span<const CustomWorkload> custom) {
  return Lookup(kind) != nullptr || CustomWorkloadOf(kind, custom) != nullptr;
}

Result<std::vector<PodSpecLocation>> FindPodSpecs(const GroupVersionKind& kind, JsonView object,
                                                  std::span<const CustomWorkload> custom) {
  const KnownKind* known = Lookup(kind);
  const CustomWorkload* workload = known == nullptr ? CustomWorkloadOf(kind, custom) : nullptr;
  if (known == nullptr && workload == nullptr) return std::vector<PodSpecLocation>{};
  if (!object.is_object()) return Error{"the " + kind.kind + " object is not a JSON object"};
  if (workload != nullptr) return FindCustomPodSpecs(kind, object, *workload);

  std::vector<PodSpecLocation> found(1);  // not a braced list: that would copy the location
  PodSpecLocation& at = found.front();
  at.spec = Joined({known->template_path, "/spec"});
  at.metadata = Joined({known->template_path, "/metadata"});
  at.is_pod = known->template_path.empty();
  JsonView spec = object.AtPointer(at.spec);
  if (!spec.present()) return std::vector<PodSpecLocation>{};
  if (!spec.is_object()) {
    return Error{kind.kind + " " + at.spec + " is not an object"};
  }
  return found;
}

}  // namespace gpuadmit
