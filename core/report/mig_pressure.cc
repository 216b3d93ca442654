#include "core/report/mig_pressure.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/kube/mig_resource.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kFallbacksMetric = "gpuadmit_mig_fallbacks_total";
constexpr std::string_view kDecisionsMetric = "gpuadmit_decisions_total";

uint64_t CountOf(double value) {
  return std::isfinite(value) && value > 0 ? static_cast<uint64_t>(std::llround(value)) : 0;
}

}  // namespace

MigPressureCounters MigPressureFromSamples(std::span<const PromSample> samples) {
  MigPressureCounters counters;
  std::map<std::pair<std::string, std::string>, uint64_t> pairs;
  for (const PromSample& s : samples) {
    if (s.name == kFallbacksMetric) {
      pairs[{std::string(s.Label("from_profile")), std::string(s.Label("to_profile"))}] +=
          CountOf(s.value);
    } else if (s.name == kDecisionsMetric && s.Label("stage") == "mig_fallback" &&
               s.Label("outcome") == "exhausted") {
      counters.exhausted_total += CountOf(s.value);
    }
  }
  for (auto& [pair, count] : pairs) {
    if (count > 0) counters.fallbacks.push_back({pair.first, pair.second, count});
  }
  return counters;
}

std::vector<MigProfilePressure> MigPressure(const MigPressureCounters& counters,
                                            std::span<const NodeFacts> nodes,
                                            std::span<const ReportPod> pods) {
  std::map<std::string, MigProfilePressure, std::less<>> rows;
  uint64_t total = 0;
  for (const MigFallbackCount& f : counters.fallbacks) {
    MigProfilePressure& row = rows[f.from];
    row.fallbacks += f.count;
    row.given.emplace_back(f.to, f.count);
    total += f.count;
  }
  for (const auto& [profile, count] : counters.exhausted_by_profile) {
    if (count > 0) rows[profile].exhausted = count;
  }
  std::set<std::string, std::less<>> usable;
  for (const NodeFacts& n : nodes) {
    if (n.ready && !n.unschedulable) usable.insert(n.name);
  }
  for (auto& [profile, row] : rows) {
    row.profile = profile;
    row.share_percent = total > 0 ? static_cast<double>(row.fallbacks) * 100 / total : 0;
    std::stable_sort(row.given.begin(), row.given.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string resource(kMigResourcePrefix);
    resource += profile;
    for (const NodeFacts& n : nodes) {
      if (usable.contains(n.name)) row.allocatable_now += Get(n.allocatable, resource);
    }
    int64_t used = 0;
    for (const ReportPod& p : pods) {
      if (!p.terminal && usable.contains(p.node)) used += Get(p.need, resource);
    }
    row.free_now = std::max<int64_t>(row.allocatable_now - used, 0);
  }
  std::vector<MigProfilePressure> out;
  for (auto& [profile, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.fallbacks != b.fallbacks) return a.fallbacks > b.fallbacks;
    return a.exhausted.value_or(0) > b.exhausted.value_or(0);
  });
  return out;
}

}  // namespace gpuadmit
