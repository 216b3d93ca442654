#include "webhook/admission/admission_handler.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <exception>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/admission/admission.h"
#include "core/admission/review.h"
#include "core/inventory/replica_share.h"
#include "core/plan/sharing_rules.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

std::string ErrorBody(std::string_view reason) {
  return nlohmann::json({{"error", reason}})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Counter CounterFor(AdmissionOutcome::Kind kind, FailureMode mode) {
  switch (kind) {
    case AdmissionOutcome::Kind::kAllow:
      return Counter::kReviewsAllowed;
    case AdmissionOutcome::Kind::kPatch:
      return Counter::kReviewsPatched;
    case AdmissionOutcome::Kind::kDeny:
      return Counter::kReviewsDenied;
    case AdmissionOutcome::Kind::kError:
      return mode == FailureMode::kOpen ? Counter::kReviewsFailOpen : Counter::kReviewsFailClosed;
  }
  return Counter::kReviewsAllowed;
}

// Whether every entry of a table below was given (a missing one would be Counter{}, the first).
template <size_t N>
constexpr bool EveryEntryGiven(const std::array<Counter, N>& table) {
  return std::none_of(table.begin(), table.end(), [](Counter c) { return c == Counter{}; });
}

// The counter of each SharingMode, in SharingMode's order.
constexpr std::array<Counter, kSharingModes> kSharingModeCounters = {
    Counter::kSharingModeExclusive, Counter::kSharingModeMig, Counter::kSharingModeMps,
    Counter::kSharingModeTimeSlicing};
static_assert(EveryEntryGiven(kSharingModeCounters) &&
              kSharingModeCounters[static_cast<size_t>(SharingMode::kTimeSlicing)] ==
                  Counter::kSharingModeTimeSlicing);

// Adds what a review's stages decided to the decision metrics: a few relaxed atomic adds, and
// the fallback pairs' mutex only when a pod fell back.
void CountDecisions(const DecisionCounts& counts, Metrics& metrics) {
  for (size_t i = 0; i < kDecisionPoints; ++i) {
    if (counts.points[i] != 0) metrics.AddDecision(DecisionPoint(i), counts.points[i]);
  }
  for (size_t i = 0; i < kSharingModes; ++i) {
    if (counts.modes[i] != 0) metrics.Add(kSharingModeCounters[i], counts.modes[i]);
  }
  if (counts.mig_eligible != 0) metrics.Add(Counter::kMigEligiblePods, counts.mig_eligible);
  if (counts.saved_micro_gpus > 0) {
    metrics.Add(Counter::kGpuSavingsMicro, static_cast<uint64_t>(counts.saved_micro_gpus));
  }
  for (const MigFallbackStep& step : counts.fallbacks) metrics.IncMigFallback(step.from, step.to);
}

constexpr std::string_view OutcomeName(AdmissionOutcome::Kind kind) {
  switch (kind) {
    case AdmissionOutcome::Kind::kAllow:
      return "allow";
    case AdmissionOutcome::Kind::kPatch:
      return "patch";
    case AdmissionOutcome::Kind::kDeny:
      return "deny";
    case AdmissionOutcome::Kind::kError:
      return "error";
  }
  return "";
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ReviewOutcome OutcomeOf(AdmissionOutcome::Kind kind, FailureMode mode) {
  switch (kind) {
    case AdmissionOutcome::Kind::kAllow:
      return ReviewOutcome::kAllowed;
    case AdmissionOutcome::Kind::kPatch:
      return ReviewOutcome::kPatched;
    case AdmissionOutcome::Kind::kDeny:
      return ReviewOutcome::kDenied;
    case AdmissionOutcome::Kind::kError:
      break;
  }
  return mode == FailureMode::kOpen ? ReviewOutcome::kFailOpen : ReviewOutcome::kFailClosed;
}

// The status page's record of one review. It takes the answer's strings, which the handler no
// longer needs, all but the body; the trail is copied when `keep_trail` (the handler's answer
// carries it too, under SetExplain), and taken otherwise.
DecisionRecord RecordOf(ReviewAnswer& a, FailureMode mode, bool keep_trail) {
  DecisionRecord r{.at_unix_ms = NowUnixMs(),
                   .uid = std::move(a.uid),
                   .object = std::move(a.summary),
                   .outcome = OutcomeOf(a.kind, mode),
                   .asked = std::move(a.asked),
                   .node = std::move(a.node),
                   .warnings = std::move(a.warnings),
                   .trail = keep_trail ? a.trail : std::move(a.trail)};
  for (const MigFallbackStep& step : a.decisions.fallbacks) {
    AppendAll(r.fallback, {r.fallback.empty() ? "" : "; ", step.from, " -> ", step.to});
  }
  for (size_t i = kSharingModes; i-- > 0;) {  // the most shared mode a pod spec was given
    if (a.decisions.modes[i] == 0) continue;
    r.sharing_mode = SharingModeName(static_cast<SharingMode>(i));
    break;
  }
  return r;
}

}  // namespace

bool IsJsonContentType(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  while (!media.empty() && media.front() == ' ') media.remove_prefix(1);
  constexpr std::string_view kJson = "application/json";
  return media.size() == kJson.size() &&
         std::equal(media.begin(), media.end(), kJson.begin(), [](char a, char b) {
           // ASCII only, as media types are: std::tolower is a call into the C library per byte.
           return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
         });
}

HandlerAnswer AdmissionHandler::Reject(int status, Counter counter, std::string reason) {
  metrics_.Inc(counter);
  log_.Warn("request rejected", {{"status", std::to_string(status)}, {"reason", reason}});
  return {status, ErrorBody(reason)};
}

void AdmissionHandler::SetSnapshot(std::shared_ptr<const InventorySnapshot> snapshot) {
  snapshot_.store(std::move(snapshot));
  snapshot_at_ms_.store(NowUnixMs(), std::memory_order_relaxed);
  metrics_.Inc(Counter::kSnapshots);
}

HandlerAnswer AdmissionHandler::Handle(std::string_view content_type, std::string_view body,
                                       int64_t replica_share, std::string_view scope) {
  if (body.empty()) return Reject(400, Counter::kBadRequests, "empty body");
  if (body.size() > kMaxReviewBody) {
    return Reject(413, Counter::kPayloadTooLarge, "body larger than 7 MiB");
  }
  if (!IsJsonContentType(content_type)) {
    return Reject(415, Counter::kUnsupportedMedia,
                  "content type \"" + std::string(content_type) + "\" is not application/json");
  }
  std::shared_ptr<const Policy> policy = policy_.load();
  std::shared_ptr<const InventorySnapshot> snapshot = snapshot_.load();
  static const Policy kDefaultPolicy;
  static const InventorySnapshot kEmptySnapshot;
  const Policy& p = policy ? *policy : kDefaultPolicy;

  auto start = std::chrono::steady_clock::now();
  try {
    bool stale = stale_ && stale_();
    std::shared_ptr<const ClusterGpuMetrics> gpu_metrics = gpu_metrics_.load();
    // Per-node explanations cost string work on every GPU pod: only for debug logs or --explain.
    const InventorySnapshot& inventory = snapshot ? *snapshot : kEmptySnapshot;
    std::optional<SharedLedger::Scope> scoped;
    std::optional<ReplicaShare> share;
    Reservations* reservations = reservations_;
    if (!scope.empty() && ledger_ != nullptr) reservations = &scoped.emplace(ledger_->In(scope));
    if (replica_share > 1 && reservations != nullptr) {
      reservations = &share.emplace(*reservations, inventory, replica_share);
    }
    ReviewContext context{inventory, p, gpu_metrics.get(), reservations, stale};
    context.explain = explain_ || log_.Enabled(LogLevel::kDebug);
    auto answer = Review(body, context);
    if (!answer.ok()) return Reject(400, Counter::kBadRequests, answer.error().message);
    metrics_.ObserveReview(std::chrono::steady_clock::now() - start);
    ReviewAnswer& a = answer.value();
    metrics_.Inc(CounterFor(a.kind, p.failure_mode));
    CountDecisions(a.decisions, metrics_);
    if (a.skipped_stale) {
      metrics_.Inc(Counter::kSkippedStale);
      log_.Warn("GPU decision skipped: inventory stale", {{"uid", a.uid}, {"object", a.summary}});
    }
    LogLevel level = a.kind == AdmissionOutcome::Kind::kAllow ? LogLevel::kDebug : LogLevel::kInfo;
    if (a.kind == AdmissionOutcome::Kind::kError) level = LogLevel::kWarn;
    if (log_.Enabled(level)) {
      std::string trail;
      for (const std::string& step : a.trail) AppendAll(trail, {trail.empty() ? "" : "; ", step});
      log_.Log(level, "review",
               {{"uid", a.uid},
                {"object", a.summary},
                {"outcome", OutcomeName(a.kind)},
                {"trail", trail}});
    }
    decision_log_.Record(RecordOf(a, p.failure_mode, explain_));  // last: it takes the fields
    return {200, std::move(a.body), "application/json", std::move(a.trail)};  // empty if taken
  } catch (const std::exception& e) {
    // Review catches what its own decisions throw; this is the last line, for what escapes
    // encoding or allocation. Answer by the failure mode when the uid can still be read.
    metrics_.Inc(Counter::kHandlerPanics);
    log_.Error("review failed", {{"error", e.what()}});
    auto request = DecodeAdmissionReview(body);
    if (!request.ok()) return {500, ErrorBody("internal error")};
    metrics_.Inc(CounterFor(AdmissionOutcome::Kind::kError, p.failure_mode));
    decision_log_.Record({.at_unix_ms = NowUnixMs(),
                          .uid = request.value().uid,
                          .outcome = OutcomeOf(AdmissionOutcome::Kind::kError, p.failure_mode),
                          .trail = {std::string("internal error: ") + e.what()}});
    return {200,
            EncodeAdmissionResponse(
                request.value(), AdmissionOutcome::Fail(std::string("internal error: ") + e.what()),
                p.failure_mode)};
  }
}

}  // namespace gpuadmit
