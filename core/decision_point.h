// DecisionPoint: the (stage, outcome) pairs of the planning stages and of the review around
// them, declared once: the enum the stages mark (core/plan/decision_counts.h) and, in the same
// order, the stage and outcome gpuadmit_decisions_total exports each under
// (webhook/telemetry/metrics.h).
//
//   tally.Mark(DecisionPoint::kMigFallback);
//   kDecisionPointNames[static_cast<size_t>(DecisionPoint::kMigFallback)].outcome  // "fallback"
//
// Thread safety: constants only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuadmit {

enum class DecisionPoint : uint8_t {
  kRequirementsFilled,     // a GPU count left out was filled in from the parallelism
  kRequirementsCorrected,  // a GPU count that disagreed with the parallelism was corrected
  kRequirementsWarned,     // a GPU count that disagreed was left as asked, with a warning
  kSharingApplied,         // MIG, MPS or time-slicing replaced the pod's nvidia.com/gpu
  kSharingNotApplied,      // a sharing mode was chosen but could not be applied: whole GPUs kept
  kMigFallback,            // a MIG profile free on no usable node was replaced by a smaller one
  kMigExhausted,           // ... and no smaller profile was free either
  kQueueGated,             // the pod was held back by the capacity gate, to wait in the queue
  kPlacementChosen,        // a node was chosen and the pod steered to it
  kPlacementNone,          // no node could take the pod now: no node affinity added
  kPlacementNoIdle,        // most-idle: no node that could take it has an idle GPU: left alone
  kReviewDenied,           // the review was denied by a decision (mig.onExhausted: deny)
  kReviewSkippedStale,     // GPU decisions were skipped: the inventory is stale
  kCount,
};
inline constexpr size_t kDecisionPoints = static_cast<size_t>(DecisionPoint::kCount);

struct DecisionPointName {
  DecisionPoint point;
  std::string_view stage;
  std::string_view outcome;
};

// Every DecisionPoint's labels, in the enum's order (checked below).
inline constexpr std::array<DecisionPointName, kDecisionPoints> kDecisionPointNames = {{
    {DecisionPoint::kRequirementsFilled, "requirements", "filled"},
    {DecisionPoint::kRequirementsCorrected, "requirements", "corrected"},
    {DecisionPoint::kRequirementsWarned, "requirements", "warned"},
    {DecisionPoint::kSharingApplied, "sharing", "applied"},
    {DecisionPoint::kSharingNotApplied, "sharing", "not_applied"},
    {DecisionPoint::kMigFallback, "mig_fallback", "fallback"},
    {DecisionPoint::kMigExhausted, "mig_fallback", "exhausted"},
    {DecisionPoint::kQueueGated, "queue", "gated"},
    {DecisionPoint::kPlacementChosen, "placement", "chosen"},
    {DecisionPoint::kPlacementNone, "placement", "none"},
    {DecisionPoint::kPlacementNoIdle, "placement", "no_idle"},
    {DecisionPoint::kReviewDenied, "review", "denied"},
    {DecisionPoint::kReviewSkippedStale, "review", "skipped_stale"},
}};

constexpr bool DecisionPointNamesInOrder() {
  for (size_t i = 0; i < kDecisionPoints; ++i) {
    if (static_cast<size_t>(kDecisionPointNames[i].point) != i) return false;
    if (kDecisionPointNames[i].stage.empty() || kDecisionPointNames[i].outcome.empty()) return false;
  }
  return true;
}
static_assert(DecisionPointNamesInOrder(), "one row per DecisionPoint, in its order");

}  // namespace gpuadmit
