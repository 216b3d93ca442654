#include "core/plan/model_memory.h"

#include <algorithm>
#include <cctype>

namespace gpuadmit {
namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool EqualAt(std::string_view text, size_t at, std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (Lower(text[at + i]) != Lower(pattern[i])) return false;
  }
  return true;
}

}  // namespace

bool ModelNameMatches(std::string_view model, std::string_view pattern) {
  if (pattern.empty() || pattern.size() > model.size()) return false;
  bool numeric = IsDigit(pattern.front());
  for (size_t at = 0; at + pattern.size() <= model.size(); ++at) {
    if (!EqualAt(model, at, pattern)) continue;
    // "7b" inside "17b", "70b" or "2.7b" is another size.
    if (numeric && at > 0 && (IsDigit(model[at - 1]) || model[at - 1] == '.')) continue;
    return true;
  }
  return false;
}

ModelMemory ModelMemoryMib(std::string_view model, const RequirementsPolicy& policy,
                           int64_t gpus) {
  auto rule =
      std::find_if(policy.model_memory.begin(), policy.model_memory.end(),
                   [&](const ModelMemoryRule& r) { return ModelNameMatches(model, r.contains); });
  if (rule == policy.model_memory.end()) {
    return {policy.default_model_memory_mib, "", policy.default_model_memory_mib, 0};
  }
  int64_t mib = rule->memory_mib;
  if (rule->split_over > 0) {
    int64_t on = std::max<int64_t>(gpus, 1);
    int64_t total = rule->memory_mib * rule->split_over;
    mib = std::max(rule->memory_mib, (total + on - 1) / on);
  }
  return {mib, rule->contains, rule->memory_mib, rule->split_over};
}

}  // namespace gpuadmit
