// MIG layout pressure: per MIG profile, how often a pod asked for it when it was free on no node
// the pod could use while a smaller profile was (gpuadmit's MIG fallback), so that an
// operator knows which mig-parted layout to change: a profile that keeps falling back wants more
// instances of it in the layout, at the expense of the ones it fell back to. Read from
// gpuadmit's own counters (gpuadmit_mig_fallbacks_total{from_profile,to_profile}, and
// gpuadmit_decisions_total{stage="mig_fallback",outcome="exhausted"}: no smaller profile was
// free either, a shortage no layout change fixes), beside what is free now.
//
//   MigPressureCounters counters = MigPressureFromSamples(ParseExposition(text).samples);
//   std::vector<MigProfilePressure> rows = MigPressure(counters, nodes, pods);
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/inventory/prometheus_samples.h"
#include "core/kube/kube_objects.h"
#include "core/report/report_pod.h"

namespace gpuadmit {

struct MigFallbackCount {
  std::string from;  // profile asked for, e.g. "2g.20gb" ("other": the metric's overflow series)
  std::string to;    // profile given, e.g. "1g.10gb"
  uint64_t count = 0;
  bool operator==(const MigFallbackCount&) const = default;
};

struct MigPressureCounters {
  std::vector<MigFallbackCount> fallbacks;
  // Pods whose profile ran out with no smaller one free, per profile asked for, where the caller
  // knows it (the running server's decisions); the exported metric has only the total.
  std::map<std::string, uint64_t, std::less<>> exhausted_by_profile;
  uint64_t exhausted_total = 0;
  bool operator==(const MigPressureCounters&) const = default;
};

// The counters in a scrape of gpuadmit's /metrics (or an instant query's answer for the two
// series). A pair written twice (two replicas' scrapes in one file) is added up.
MigPressureCounters MigPressureFromSamples(std::span<const PromSample> samples);

struct MigProfilePressure {
  std::string profile;
  uint64_t fallbacks = 0;    // times it ran out while a smaller profile was free
  double share_percent = 0;  // of every fallback counted
  std::vector<std::pair<std::string, uint64_t>> given;  // profile given instead: count, most first
  std::optional<uint64_t> exhausted;  // ran out with none smaller free, when known per profile
  int64_t allocatable_now = 0;        // instances of it on Ready, schedulable nodes
  int64_t free_now = 0;               // ... not requested by a non-terminal pod bound there
};

// One row per profile that fell back or ran out, most fallbacks first (then exhausted, then
// name). Free and allocatable counts are read off `nodes` and `pods`
// (nvidia.com/mig-<profile>).
std::vector<MigProfilePressure> MigPressure(const MigPressureCounters& counters,
                                            std::span<const NodeFacts> nodes,
                                            std::span<const ReportPod> pods);

}  // namespace gpuadmit
