// The RFC 6902 operations of a placement decision: node affinity terms, the
// tolerations of the worker defaults, the in-memory /dev/shm volume, the environment
// variables of the GPU containers (MPS client settings), and their cpu and memory by GPU type.
//
//   AppendPlacementPatch(object, location, decision, ops);  // called by AppendPatch
//
// Merging keeps the pod's meaning: each requirement of decision.required is ANDed into every
// required nodeSelectorTerm that has any requirement (terms are ORed, so the pod can still go
// wherever a term allowed, now only where the requirement holds too; a term with none matches
// no node and is left alone), or makes the one term when there is none; preferred terms are
// appended. Missing parents (affinity, nodeAffinity, requiredDuringSchedulingIgnoredDuring-
// Execution, nodeSelectorTerms, the preferred list, tolerations, volumes, volumeMounts) are
// created with their first element. An operation is emitted only for what the object does not
// already say: a requirement already in a term, an identical preferred term (same weight and
// expressions), an identical toleration, a volume named gpuadmit-shm, a container that already
// mounts something at /dev/shm, a variable the container already sets (its own value kept), a
// cpu or memory quantity it already sets. So patching the patched object again gives nothing.
//
// The /dev/shm volume is `gpuadmit-shm` (emptyDir, medium Memory, sizeLimit decision.shm_size),
// mounted at /dev/shm in every container that asks for an nvidia.com/ resource.
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "core/admission/json_patch.h"
#include "core/kube/workload.h"
#include "core/plan/planner.h"

namespace gpuadmit {

inline constexpr std::string_view kShmVolumeName = "gpuadmit-shm";

// Appends to `ops` what makes the pod spec at `where` in `object` carry `decision`'s node
// affinity, tolerations, /dev/shm, environment and cpu and memory defaults.
void AppendPlacementPatch(JsonView object, const PodSpecLocation& where, const Decision& decision,
                          JsonPatch& patch);

}  // namespace gpuadmit
