// AppendJobDefaults: the policy's jobDefaults (ttlSecondsAfterFinished, activeDeadlineSeconds,
// backoffLimit) as RFC 6902 operations on a batch Job's spec, or a CronJob's jobTemplate spec,
// each only where the spec has none, so answering the same object again adds nothing.
//
//   AppendJobDefaults(request.kind, request.object, policy.job_defaults, patch, trail);
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "core/admission/json_patch.h"
#include "core/json/json_view.h"
#include "core/kube/group_version_kind.h"
#include "core/policy/policy.h"

namespace gpuadmit {

// Nothing for a kind that is not a batch Job or CronJob, or a policy that sets no default. What
// it adds is said in `trail`.
void AppendJobDefaults(const GroupVersionKind& kind, JsonView object, const JobDefaults& defaults,
                       JsonPatch& patch, std::vector<std::string>& trail);

}  // namespace gpuadmit
