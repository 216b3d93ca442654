// DecisionCounts: what the planning stages did, as numbers a caller can add up without reading
// the trail. Each stage marks its outcome in its Decision's `tally`; Review sums the tallies of
// an object's pod specs into ReviewAnswer::decisions, and the webhook turns that into counters
// (webhook/telemetry/metrics.cc, docs/monitoring.md).
//
//   Decision d = Plan(pod, context);
//   d.tally.Count(DecisionPoint::kMigFallback);  // 1: a MIG profile fell back
//   d.tally.fallbacks;                          // {{"2g.20gb", "1g.10gb"}}
//
// In one pod spec's tally each point and mode is 0 or 1 (Mark): "this pod spec was corrected",
// however many of its containers were. Adding tallies counts pod specs.
//
// Thread safety: a value type; no shared state.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/decision_point.h"
#include "core/policy/policy.h"

namespace gpuadmit {

// SharingMode's values, kExclusive to kTimeSlicing, index DecisionCounts::modes.
inline constexpr size_t kSharingModes = 4;
static_assert(static_cast<size_t>(SharingMode::kTimeSlicing) + 1 == kSharingModes);

// One MIG fallback: profile names, e.g. {"2g.20gb", "1g.10gb"}.
struct MigFallbackStep {
  std::string from;
  std::string to;
  bool operator==(const MigFallbackStep&) const = default;
};

// Millionths of a GPU: the unit estimated savings are added up in, so fractions such as 6/7 of
// a GPU add exactly (rounded once, per pod spec) with relaxed integer atomics.
inline constexpr int64_t kMicroGpusPerGpu = 1'000'000;

struct DecisionCounts {
  std::array<uint32_t, kDecisionPoints> points{};
  // The sharing mode the sharing stage settled on: exclusive when it decided on whole GPUs, a
  // sharing mode when it applied it. A mode chosen but not applied counts in kSharingNotApplied.
  std::array<uint32_t, kSharingModes> modes{};
  std::vector<MigFallbackStep> fallbacks;  // empty (no allocation) unless a profile fell back
  // Pod specs that meet the MIG condition: not training, one nvidia.com/gpu, a known
  // GPU memory need below sharing.migBelow. Whether MIG was then applied or not.
  uint32_t mig_eligible = 0;
  // Whole GPUs not taken because the sharing stage put the pod on a MIG slice or a shared GPU
  // replica: the nvidia.com/gpu it asked for less the GPU equivalents of what it asks for now
  // (core/kube/gpu_equivalents.h: 1g.10gb 1/7, a replica of a GPU shared 4 ways 1/4), in
  // millionths of a GPU.
  int64_t saved_micro_gpus = 0;

  void Mark(DecisionPoint p) { points[static_cast<size_t>(p)] = 1; }
  void MarkMode(SharingMode m) { modes[static_cast<size_t>(m)] = 1; }
  uint32_t Count(DecisionPoint p) const { return points[static_cast<size_t>(p)]; }
  uint32_t Mode(SharingMode m) const { return modes[static_cast<size_t>(m)]; }

  // Adds `other`'s counts to these; its fallbacks are moved over.
  void Add(DecisionCounts&& other) {
    for (size_t i = 0; i < points.size(); ++i) points[i] += other.points[i];
    for (size_t i = 0; i < modes.size(); ++i) modes[i] += other.modes[i];
    if (fallbacks.empty()) {
      fallbacks = std::move(other.fallbacks);
    } else {
      fallbacks.insert(fallbacks.end(), other.fallbacks.begin(), other.fallbacks.end());
    }
    mig_eligible += other.mig_eligible;
    saved_micro_gpus += other.saved_micro_gpus;
  }

  bool operator==(const DecisionCounts&) const = default;
};

}  // namespace gpuadmit
