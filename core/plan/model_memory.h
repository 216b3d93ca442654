// A pod's GPU memory need per GPU: a quantity the user wrote (<prefix>/gpu-memory: "16Gi",
// "16G", or bare MiB "16000"), else a heuristic on the model's name (70B/65B -> 20,000
// MiB, 13B/7B -> 12,000 MiB, any other model 8,000 MiB; the policy's requirements.model_memory).
//
//   ModelNameMatches("Llama-2-7b-chat", "7b");                // true
//   ModelNameMatches("Qwen1.5-17B", "7b");                    // false: 17B is not 7B
//   ModelMemoryMib("meta-llama/Llama-3-70B", policy.requirements);  // {20000, "70b"}
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/policy/policy.h"

namespace gpuadmit {

// Whether `model` contains `pattern`, ignoring case. A pattern starting with a digit must start
// at a number's start: "7b" matches "mistral-7b" and "mixtral-8x7b" but not "qwen-17b" or
// "phi-2.7b".
bool ModelNameMatches(std::string_view model, std::string_view pattern);

struct ModelMemory {
  int64_t mib = 0;
  std::string rule;     // the pattern that matched, "" for the default
  int64_t rule_mib = 0;  // the rule's own figure, per GPU of its split
  int64_t split_over = 0;  // the rule's GPUs (0: per GPU whatever the count)
};

// The memory need of `model` on each of `gpus` GPUs (at least 1): the first rule it matches,
// else the default. A rule split over N GPUs needs memory x N in all, spread over the pod's
// GPUs, so a pod with fewer GPUs than N needs more on each, never less than the rule's figure.
ModelMemory ModelMemoryMib(std::string_view model, const RequirementsPolicy& policy,
                           int64_t gpus = 1);

}  // namespace gpuadmit
