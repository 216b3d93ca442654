#include "core/admission/job_defaults.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "core/admission/patch_path.h"

namespace gpuadmit {

void AppendJobDefaults(const GroupVersionKind& kind, JsonView object, const JobDefaults& defaults,
                       JsonPatch& patch, std::vector<std::string>& trail) {
  if (kind.group != "batch") return;
  std::string_view at;
  if (kind.kind == "Job") at = "/spec";
  if (kind.kind == "CronJob") at = "/spec/jobTemplate/spec";
  if (at.empty()) return;
  JsonView spec = object.AtPointer(at);
  if (!spec.is_object()) return;
  const std::pair<std::string_view, const std::optional<int64_t>&> fields[] = {
      {"ttlSecondsAfterFinished", defaults.ttl_seconds_after_finished},
      {"activeDeadlineSeconds", defaults.active_deadline_seconds},
      {"backoffLimit", defaults.backoff_limit},
  };
  for (const auto& [name, value] : fields) {
    if (!value || spec[name].present()) continue;
    patch.Add(PatchPath(at) / name, *value);
    trail.push_back("job defaults: " + std::string(name) + " " + std::to_string(*value));
  }
}

}  // namespace gpuadmit
