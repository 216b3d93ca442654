#include "core/plan/sharing_rules.h"

#include <algorithm>
#include <cctype>

namespace gpuadmit {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool InRange(int64_t value, const std::optional<int64_t>& min, const std::optional<int64_t>& max) {
  return (!min || value >= *min) && (!max || value <= *max);
}

}  // namespace

std::string_view SharingModeName(SharingMode mode) {
  switch (mode) {
    case SharingMode::kExclusive:
      return "exclusive";
    case SharingMode::kMig:
      return "mig";
    case SharingMode::kMps:
      return "mps";
    case SharingMode::kTimeSlicing:
      return "time-slicing";
  }
  return "exclusive";
}

std::optional<SharingMode> ParseSharingMode(std::string_view text) {
  std::string name = Lower(text);
  if (name == "exclusive") return SharingMode::kExclusive;
  if (name == "mig") return SharingMode::kMig;
  if (name == "mps") return SharingMode::kMps;
  if (name == "time-slicing" || name == "timeslicing" || name == "time_slicing") {
    return SharingMode::kTimeSlicing;
  }
  return std::nullopt;
}

bool SelectorMatches(const SharingSelector& s, const SharingFacts& facts) {
  if (!s.namespaces.empty() &&
      std::find(s.namespaces.begin(), s.namespaces.end(), facts.ns) == s.namespaces.end()) {
    return false;
  }
  for (const auto& [key, value] : s.pod_labels) {
    if (facts.labels == nullptr) return false;
    auto it = facts.labels->find(key);
    if (it == facts.labels->end() || it->second != value) return false;
  }
  if (!s.workload_types.empty() &&
      std::none_of(s.workload_types.begin(), s.workload_types.end(),
                   [&](const std::string& t) { return Lower(t) == facts.workload_type; })) {
    return false;
  }
  if (!InRange(facts.gpus, s.min_gpus, s.max_gpus)) return false;
  if (s.min_memory_mib || s.max_memory_mib) {
    if (facts.memory_mib <= 0) return false;
    if (!InRange(facts.memory_mib, s.min_memory_mib, s.max_memory_mib)) return false;
  }
  return true;
}

const SharingRule* FirstMatchingRule(const std::vector<SharingRule>& rules,
                                     const SharingFacts& facts) {
  auto it = std::find_if(rules.begin(), rules.end(),
                         [&](const SharingRule& r) { return SelectorMatches(r.match, facts); });
  return it == rules.end() ? nullptr : &*it;
}

}  // namespace gpuadmit
