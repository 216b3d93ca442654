#include "webhook/telemetry/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace gpuadmit {
namespace {

struct CounterInfo {
  Counter counter;
  std::string_view name;
  std::string_view labels;
  std::string_view help;
};

// The one table of counters. Series sharing a name are rendered under one HELP/TYPE header.
constexpr CounterInfo kCounters[] = {
    {Counter::kReviewsAllowed, "gpuadmit_admission_reviews_total", R"(outcome="allow")",
     "AdmissionReviews answered, by outcome."},
    {Counter::kReviewsPatched, "gpuadmit_admission_reviews_total", R"(outcome="patch")", ""},
    {Counter::kReviewsDenied, "gpuadmit_admission_reviews_total", R"(outcome="deny")", ""},
    {Counter::kReviewsFailOpen, "gpuadmit_admission_reviews_total", R"(outcome="fail_open")", ""},
    {Counter::kReviewsFailClosed, "gpuadmit_admission_reviews_total", R"(outcome="fail_closed")",
     ""},
    {Counter::kBadRequests, "gpuadmit_http_rejected_total", R"(code="400")",
     "Requests refused before review, by HTTP status."},
    {Counter::kPayloadTooLarge, "gpuadmit_http_rejected_total", R"(code="413")", ""},
    {Counter::kUnsupportedMedia, "gpuadmit_http_rejected_total", R"(code="415")", ""},
    {Counter::kOverCapacity, "gpuadmit_http_rejected_total", R"(code="503")", ""},
    {Counter::kHandlerPanics, "gpuadmit_handler_exceptions_total", "",
     "Exceptions that escaped a review and were answered by the failure mode."},
    {Counter::kSkippedStale, "gpuadmit_decisions_skipped_stale_total", "",
     "GPU decisions skipped because the inventory watch was down past the staleness limit."},
    {Counter::kClusterReloadFailures, "gpuadmit_cluster_file_reload_failures_total", "",
     "Changed --cluster files that could not be loaded; the last good inventory stayed."},
    {Counter::kPolicyReloads, "gpuadmit_policy_reloads_total", "",
     "Changed --policy files that validated and took effect."},
    {Counter::kPolicyReloadFailures, "gpuadmit_policy_reload_failures_total", "",
     "Changed --policy files that did not validate; the last good policy stayed."},
    {Counter::kCertReloads, "gpuadmit_certificate_reloads_total", "",
     "Changed serving certificate files that loaded; new handshakes present them."},
    {Counter::kCertReloadFailures, "gpuadmit_certificate_reload_failures_total", "",
     "Changed serving certificate files that were refused (unreadable, key mismatch, outside "
     "their validity); the last good pair stayed."},
    {Counter::kLeaderTransitions, "gpuadmit_leader_transitions_total", "",
     "Times this replica started leading (--leader-elect)."},
    {Counter::kForwardedAnswered, "gpuadmit_forwarded_reviews_total", R"(outcome="answered")",
     "Reviews a follower forwarded to the leader (--leader-elect) and answered with its answer."},
    {Counter::kForwardNoLeader, "gpuadmit_forward_failures_total", R"(reason="no_leader")",
     "Reviews a follower decided itself, degraded, because no leader was known or the leader did "
     "not answer in time (--leader-elect)."},
    {Counter::kForwardLeaderFailed, "gpuadmit_forward_failures_total", R"(reason="leader_failed")",
     ""},
    {Counter::kSnapshots, "gpuadmit_inventory_snapshots_total", "",
     "Inventory snapshots handed to decisions: one per batch of watch events, relist or cluster "
     "file load."},
};

}  // namespace

void Metrics::Histogram::Observe(std::chrono::nanoseconds took) {
  double seconds = std::chrono::duration<double>(took).count();
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  buckets[i].fetch_add(1, std::memory_order_relaxed);
  nanos.fetch_add(static_cast<uint64_t>(took.count()), std::memory_order_relaxed);
}

void Metrics::Histogram::Render(std::string& out, std::string_view name,
                                std::string_view help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += buckets[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBuckets[i], cumulative);
  }
  cumulative += buckets[kBuckets.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n", name, nanos.load(std::memory_order_relaxed) / 1e9);
  out += fmt::format("{}_count {}\n", name, cumulative);
}

void Metrics::ObserveReview(std::chrono::nanoseconds took) { reviews_.Observe(took); }

void Metrics::ObserveForward(std::chrono::nanoseconds took) { forwards_.Observe(took); }

std::string Metrics::Render() const {
  std::string out;
  std::string_view last_name;
  for (const CounterInfo& c : kCounters) {
    if (c.name != last_name) {
      out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", c.name, c.help, c.name);
      last_name = c.name;
    }
    out += c.labels.empty() ? fmt::format("{} {}\n", c.name, Value(c.counter))
                            : fmt::format("{}{{{}}} {}\n", c.name, c.labels, Value(c.counter));
  }
  reviews_.Render(out, "gpuadmit_review_duration_seconds",
                  "Time to decode, plan, patch and encode one review.");
  forwards_.Render(out, "gpuadmit_forward_duration_seconds",
                   "Time from forwarding a review to the leader to its answer (--leader-elect).");
  if (!build_labels_.empty()) {
    out +=
        "# HELP gpuadmit_build_info The version, revision and build date of this binary, and the "
        "versions of the libraries it links; always 1.\n"
        "# TYPE gpuadmit_build_info gauge\n";
    out += fmt::format("gpuadmit_build_info{{{}}} 1\n", build_labels_);
  }
  out +=
      "# HELP gpuadmit_leader 1 while this replica holds the leader election Lease "
      "(--leader-elect), else 0.\n"
      "# TYPE gpuadmit_leader gauge\n";
  out += fmt::format("gpuadmit_leader {}\n", leader_.load(std::memory_order_relaxed));
  if (int64_t expiry = certificate_expiry_.load(std::memory_order_relaxed); expiry != 0) {
    out +=
        "# HELP gpuadmit_certificate_expiry_timestamp_seconds The notAfter of the serving "
        "certificate presented now, in seconds since the epoch.\n"
        "# TYPE gpuadmit_certificate_expiry_timestamp_seconds gauge\n";
    out += fmt::format("gpuadmit_certificate_expiry_timestamp_seconds {}\n", expiry);
  }
  return out;
}

bool IsProbePath(std::string_view path) {
  return std::find(kProbePaths.begin(), kProbePaths.end(), path) != kProbePaths.end();
}

ProbeAnswer AnswerProbe(std::string_view path, bool ready, const Metrics& metrics) {
  if (path == "/metrics") return {200, "text/plain; version=0.0.4", metrics.Render()};
  if (path == "/healthz") return {200, "text/plain", "ok\n"};
  return {ready ? 200 : 503, "text/plain", ready ? "ready\n" : "not ready\n"};
}

}  // namespace gpuadmit
