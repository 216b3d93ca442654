// Review: one AdmissionReview body in, the answer body out. Decode, find the pod specs, plan,
// patch, encode. Everything the request path does that is not HTTP.
//
//   auto answer = Review(body, *snapshot, *policy);
//   if (!answer.ok()) -> HTTP 400 with answer.error().message
//   else              -> HTTP 200 with answer.value().body
//
// Thread safety: pure function over immutable inputs; call from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/admission/admission.h"
#include "core/inventory/gpu_metrics.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"
#include "core/plan/decision_counts.h"
#include "core/policy/policy.h"
#include "core/result.h"

namespace gpuadmit {

struct ReviewAnswer {
  std::string body;  // the AdmissionReview to send back
  std::string uid;
  AdmissionOutcome::Kind kind = AdmissionOutcome::Kind::kAllow;
  std::string summary;             // one line for the log: what was decided for which object
  std::vector<std::string> trail;  // the decision trail (--explain, debug logs)
  bool skipped_stale = false;      // a GPU decision was skipped: the inventory is stale
  // What the stages did, summed over the pod specs planned (each Decision's tally), and the
  // review's own outcomes: kReviewDenied, kReviewSkippedStale (at most 1 each per review).
  DecisionCounts decisions;
  // For the status page's recent decisions, one entry per pod spec planned, "; " between:
  std::string asked;                  // the managed resources it asked for, "nvidia.com/gpu=1"
  std::string node;                   // the node placement chose ("" when none)
  std::vector<std::string> warnings;  // the AdmissionResponse's warnings
};

// What a review reads besides the request body.
struct ReviewContext {
  const InventorySnapshot& snapshot;
  const Policy& policy;
  const ClusterGpuMetrics* metrics = nullptr;  // none: every allocatable GPU counts as idle
  Reservations* reservations = nullptr;
  bool inventory_stale = false;
  bool explain = false;  // explain every candidate node in the trail (PlanContext::explain)
};

// Errors only when `body` is not a decodable AdmissionReview; every other problem (an object
// gpuadmit cannot read, a bug) is answered by the policy's failure mode, never thrown.
// With `reservations`, a Pod CREATE (not dryRun) reserves the devices its decision counted on,
// under a key the patch writes into the <prefix>/reservation annotation. With `inventory_stale`,
// decisions that need free counts are skipped: the object passes unchanged, with a warning.
Result<ReviewAnswer> Review(std::string_view body, const ReviewContext& context);

// Review after decoding: what Review answers for `request` (DecodeAdmissionReview of the body).
ReviewAnswer ReviewRequest(const AdmissionRequest& request, const ReviewContext& context);

// The same without GPU metrics.
Result<ReviewAnswer> Review(std::string_view body, const InventorySnapshot& snapshot,
                            const Policy& policy, Reservations* reservations = nullptr,
                            bool inventory_stale = false);

// Plans a contended decision again at most this often. A failed commit means another decision
// took devices, and devices run out: in practice one or two retries.
inline constexpr int kMaxPlanAttempts = 16;

}  // namespace gpuadmit
