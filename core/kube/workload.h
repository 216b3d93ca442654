// Where the pod specs of an admitted object live: the Pod itself, the pod template of a
// workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob), or the pod-spec-shaped
// parts of a custom resource the policy names (policy.workloads, e.g. OME's InferenceService:
// /spec/engine and /spec/decoder, each with its `runner` container).
//
//   auto specs = FindPodSpecs(request.kind, request.object, policy.workloads);
//   for (const PodSpecLocation& at : specs.value()) object.AtPointer(at.spec) ...
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/json/json_view.h"
#include "core/kube/group_version_kind.h"
#include "core/result.h"

namespace gpuadmit {

// A custom resource whose pod specs gpuadmit plans (built-in kinds need no entry).
// Example, an OME InferenceService: group ome.io, kind InferenceService, podSpecs /spec/engine
// and /spec/decoder, gpuContainer runner.
struct CustomWorkload {
  std::string group;                   // API group, "" for the core group
  std::string kind;                    // e.g. "InferenceService"
  std::vector<std::string> pod_specs;  // JSON pointers (RFC 6901) to pod-spec-shaped objects
  // A field of each pod spec holding one container object (OME's `runner`); "" when the GPU
  // containers are the usual `containers` list.
  std::string gpu_container;
  std::string metadata = "/metadata";  // JSON pointer to the metadata the annotations go to
  // Write the chosen node's affinity into its pod specs, as into a Pod's: for a resource that
  // runs one replica, so that its pod lands where the decision counted.
  bool pin_node = false;
  bool operator==(const CustomWorkload&) const = default;
};

// The pointers are RFC 6901 text, tokens escaped: what JsonView::AtPointer reads and PatchPath
// writes.
struct PodSpecLocation {
  std::string spec;           // e.g. /spec/template/spec
  std::string metadata;       // the pod (template) metadata, e.g. /spec/template/metadata
  bool is_pod = false;        // a Pod object, not a template
  std::string gpu_container;  // a custom workload's single-container field; "" for none
  bool pin_node = false;      // a custom workload's pinNode: steered like a Pod
};

// True for the kinds whose pod specs gpuadmit knows: Pod, the built-in workload kinds, and the
// custom workloads given (matched on group and kind, any version).
bool IsKnownKind(const GroupVersionKind& kind, std::span<const CustomWorkload> custom = {});

// Where a built-in kind keeps its pod template: "" for a Pod (the spec is the object's own),
// "/spec/template", or "/spec/jobTemplate/spec/template" for a CronJob; nullopt for other kinds.
std::optional<std::string_view> BuiltInTemplatePath(const GroupVersionKind& kind);

// The custom workload of `custom` that declares `kind`, or nullptr.
const CustomWorkload* CustomWorkloadOf(const GroupVersionKind& kind,
                                       std::span<const CustomWorkload> custom);

// Finds the pod specs of `object` (of kind `kind`). An unknown kind, or a known one without a
// pod spec (a Deployment with no template yet, an InferenceService without a decoder), has
// none. Errors when the object is not a JSON object or a pod spec is present but is not one.
// A custom workload's specs come in the order of its pod_specs, all sharing its metadata.
Result<std::vector<PodSpecLocation>> FindPodSpecs(const GroupVersionKind& kind, JsonView object,
                                                  std::span<const CustomWorkload> custom = {});

}  // namespace gpuadmit
