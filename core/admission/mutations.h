// Turns a Decision into RFC 6902 operations on the admitted object. Paths are built with
// PatchPath (so "nvidia.com/mig-1g.10gb" is escaped as "nvidia.com~1mig-1g.10gb"),
// missing parent maps are created first, and an operation is emitted only when the object does
// not already say what the decision wants, so a patched object yields no further operations.
//
//   JsonPatch patch;
//   AppendPatch(object, location, decision, patch);
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/admission/json_patch.h"
#include "core/kube/workload.h"
#include "core/plan/planner.h"

namespace gpuadmit {

// Appends to `ops` the operations that make the pod spec at `where` in `object` match `decision`.
void AppendPatch(JsonView object, const PodSpecLocation& where, const Decision& decision,
                 JsonPatch& patch);

// Appends the operations that set `annotations` (key, value) in the metadata at
// `metadata_pointer` of `object`, creating the annotations map (or the metadata) when missing.
void SetAnnotations(JsonView object, const std::string& metadata_pointer,
                    const std::vector<std::pair<std::string, std::string>>& annotations,
                    JsonPatch& patch);

}  // namespace gpuadmit
