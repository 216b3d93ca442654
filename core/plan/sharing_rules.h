// Choosing a sharing mode by rule (the policy's sharing.rules): the names of the modes, what a
// rule's selector reads of a pod, and the first rule (policy order: highest priority first)
// whose selector matches. Applying the mode is core/plan/sharing.h's.
//
//   SharingFacts facts{pod.ns, &pod.labels, "inference", /*gpus=*/1, /*memory_mib=*/12000};
//   if (const SharingRule* r = FirstMatchingRule(policy.sharing.rules, facts)) r->mode ...
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/view_map.h"
#include "core/policy/policy.h"

namespace gpuadmit {

// "exclusive", "mig", "mps", "time-slicing".
std::string_view SharingModeName(SharingMode mode);

// A mode as a pod's sharing-mode input names it, ignoring case; "timeslicing" and
// "time_slicing" are time-slicing too. nullopt for anything else.
std::optional<SharingMode> ParseSharingMode(std::string_view text);

// What a selector reads of a pod.
struct SharingFacts {
  std::string_view ns;
  const ViewMap* labels = nullptr;
  std::string workload_type;  // lower case; "" when the pod declares none
  int64_t gpus = 0;           // nvidia.com/gpu, after the requirements stage
  int64_t memory_mib = 0;     // GPU memory need per GPU; 0 when unknown
};

// True when every field the selector sets matches. A memory bound never matches an unknown
// need, and a workload-type list never matches a pod that declares no type.
bool SelectorMatches(const SharingSelector& selector, const SharingFacts& facts);

// The first of `rules` whose selector matches, or nullptr.
const SharingRule* FirstMatchingRule(const std::vector<SharingRule>& rules,
                                     const SharingFacts& facts);

}  // namespace gpuadmit
