// Where the pod specs of an admitted object live: the Pod itself, or the pod template of a
// workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob).
//
//   auto specs = FindPodSpecs(request.kind, request.object);
//   for (const PodSpecLocation& at : specs.value()) object.at(at.spec) ...
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/admission.h"
#include "core/result.h"

namespace gpuadmit {

struct PodSpecLocation {
  nlohmann::json::json_pointer spec;  // e.g. /spec/template/spec
  nlohmann::json::json_pointer
      metadata;               // the pod (template) metadata, e.g. /spec/template/metadata
  bool is_pod = false;        // a Pod object, not a template
  std::string gpu_container;  // a custom workload's single-container field; "" for none
};

// True for the kinds whose pod specs gpuadmit knows: Pod, and the built-in workload kinds.
bool IsKnownKind(const GroupVersionKind& kind);

// Finds the pod specs of `object` (of kind `kind`). An unknown kind, or a known one without a
// pod spec (a Deployment with no template yet), has none. Errors when the object is not a JSON
// object or a pod spec is present but is not one.
Result<std::vector<PodSpecLocation>> FindPodSpecs(const GroupVersionKind& kind,
                                                  const nlohmann::json& object);

}  // namespace gpuadmit
