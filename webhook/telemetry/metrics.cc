#include "webhook/telemetry/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string_view>

namespace gpuadmit {
namespace {

struct CounterInfo {
  Counter counter;
  std::string_view name;
  std::string_view labels;
  std::string_view help;
  uint64_t per_unit = 1;  // the counter's steps per unit of the metric (1e6: millionths)
};

// The one table of counters. Series sharing a name are rendered under one HELP/TYPE header;
// every series is rendered from the start, at 0, so rate() sees its first increase.
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
    {Counter::kForwardMarkIgnored, "gpuadmit_forward_marks_ignored_total", "",
     "Reviews that carried the replicas' Gpuadmit-Forwarded mark from a client without a peer "
     "replica's certificate; handled as unmarked reviews of an unauthenticated caller."},
    {Counter::kQueueLiftsCapacity, "gpuadmit_queue_lifts_total", R"(reason="capacity")",
     "Capacity gates the leader lifted, by why: capacity freed (the pod is pinned where it was "
     "counted), its timeout, no node could ever hold it, or the policy no longer queues it."},
    {Counter::kQueueLiftsTimeout, "gpuadmit_queue_lifts_total", R"(reason="timeout")", ""},
    {Counter::kQueueLiftsUnplaceable, "gpuadmit_queue_lifts_total", R"(reason="unplaceable")", ""},
    {Counter::kQueueLiftsDisabled, "gpuadmit_queue_lifts_total", R"(reason="disabled")", ""},
    {Counter::kQueueLiftConflicts, "gpuadmit_queue_lift_conflicts_total", "",
     "Gate lifts the apiserver refused with 409 because the pod changed since it was read; read "
     "again next pass."},
    {Counter::kQueueLiftFailures, "gpuadmit_queue_lift_failures_total", "",
     "Gate lifts that failed otherwise (an API error, a missing RBAC permission); retried next "
     "pass."},
    {Counter::kSnapshots, "gpuadmit_inventory_snapshots_total", "",
     "Inventory snapshots handed to decisions: one per batch of watch events, relist or cluster "
     "file load."},
    {Counter::kSharingModeExclusive, "gpuadmit_sharing_mode_applied_total", R"(mode="exclusive")",
     "Pod specs by the sharing mode the sharing stage gave them: exclusive (whole GPUs, as "
     "decided), or the MIG, MPS or time-slicing it applied."},
    {Counter::kSharingModeMig, "gpuadmit_sharing_mode_applied_total", R"(mode="mig")", ""},
    {Counter::kSharingModeMps, "gpuadmit_sharing_mode_applied_total", R"(mode="mps")", ""},
    {Counter::kSharingModeTimeSlicing, "gpuadmit_sharing_mode_applied_total",
     R"(mode="time-slicing")", ""},
    {Counter::kMigEligiblePods, "gpuadmit_mig_eligible_pods_total", "",
     "Pod specs planned that meet the MIG condition: one nvidia.com/gpu, a known GPU "
     "memory need below sharing.migBelow, not training."},
    {Counter::kGpuSavingsMicro, "gpuadmit_estimated_gpu_savings_total", "",
     "Estimated whole GPUs not taken because a pod was put on a MIG slice or a shared GPU "
     "replica: the GPUs it asked for less the GPU equivalents it got.",
     1'000'000},
};

constexpr std::string_view kDecisions = "gpuadmit_decisions_total";
constexpr std::string_view kDecisionsHelp =
    "Pod specs planned, by what a planning stage did (each at most once per pod spec); the "
    "review stage counts reviews.";

constexpr std::string_view kMigFallbacks = "gpuadmit_mig_fallbacks_total";
constexpr std::string_view kMigFallbacksHelp =
    "Pods given a smaller MIG profile because the one they asked for was free on no node they "
    "may use, by the profile asked for and the one given.";
constexpr std::string_view kOtherProfile = "other";  // pairs beyond kMaxMigFallbackPairs

// The inventory gauges, one family per state of a resource (see docs/monitoring.md for why not
// one family with a `state` label): rendered by Metrics::SetInventory once per snapshot.
struct ResourceGaugeInfo {
  std::string_view name;
  int64_t Metrics::ResourceSeries::*field;
  std::string_view help;
};
constexpr ResourceGaugeInfo kResourceGauges[] = {
    {"gpuadmit_cluster_resource_allocatable", &Metrics::ResourceSeries::allocatable,
     "Allocatable count of an extended resource in the last inventory snapshot."},
    {"gpuadmit_cluster_resource_used", &Metrics::ResourceSeries::used,
     "Count of an extended resource requested by non-terminal pods bound to nodes."},
    {"gpuadmit_cluster_resource_queued", &Metrics::ResourceSeries::queued,
     "Count of an extended resource needed by unbound pods and counted on a node they fit."},
    {"gpuadmit_cluster_resource_reserved", &Metrics::ResourceSeries::reserved,
     "Count of an extended resource reserved by admission decisions for pods not yet seen, "
     "when the snapshot was published."},
    {"gpuadmit_cluster_resource_free", &Metrics::ResourceSeries::free,
     "Count of an extended resource a decision may hand out: per node, allocatable less used, "
     "queued and reserved, never below zero."},
    {"gpuadmit_cluster_resource_dra_allocatable", &Metrics::ResourceSeries::dra,
     "The part of an extended resource's allocatable count that DRA devices make up "
     "(ResourceSlices of NVIDIA's DRA driver)."},
};
constexpr std::string_view kStranded = "gpuadmit_mig_stranded_slices";
constexpr std::string_view kStrandedHelp =
    "Compute slices of free MIG instances of a profile that no waiting pod can use: while "
    "unbound MIG pods fit on no node, the free instances of the profiles none of them asks for.";
constexpr std::string_view kInventoryUpdated = "gpuadmit_inventory_last_update_timestamp_seconds";

}  // namespace

std::string PrometheusLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Metrics::SetInventory(const std::vector<ResourceSeries>& resources,
                           const std::vector<StrandedSeries>& stranded, int64_t unix_seconds) {
  auto text = std::make_shared<std::string>();
  std::string& out = *text;
  // About 90 bytes a series with a node label: sized once, so 5,000 nodes' series
  // (--metrics-per-node) do not regrow the string a dozen times.
  out.reserve(2048 + (resources.size() * 5 + stranded.size()) * 96);
  auto labels = [](std::string_view node, std::string_view key, std::string_view value) {
    return node.empty() ? fmt::format("{}=\"{}\"", key, PrometheusLabelValue(value))
                        : fmt::format("node=\"{}\",{}=\"{}\"", PrometheusLabelValue(node), key,
                                      PrometheusLabelValue(value));
  };
  auto header = [&out](std::string_view name, std::string_view help) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
  };
  for (const ResourceGaugeInfo& g : kResourceGauges) {
    header(g.name, g.help);
    for (const ResourceSeries& r : resources) {
      fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", g.name,
                     labels(r.node, "resource", r.resource), r.*g.field);
    }
  }
  header(kStranded, kStrandedHelp);
  for (const StrandedSeries& st : stranded) {
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", kStranded,
                   labels(st.node, "profile", st.profile), st.slices);
  }
  header(kInventoryUpdated,
         "Unix seconds when the last inventory snapshot was handed to decisions.");
  fmt::format_to(std::back_inserter(out), "{} {}\n", kInventoryUpdated, unix_seconds);
  inventory_block_.store(std::move(text));
}

void Metrics::Histogram::Observe(std::chrono::nanoseconds took) {
  double seconds = std::chrono::duration<double>(took).count();
  size_t i = 0;  // the bounds below `seconds`, counted without a branch on each
  for (double bound : bounds) i += seconds > bound;
  buckets[i].fetch_add(1, std::memory_order_relaxed);
  nanos.fetch_add(static_cast<uint64_t>(took.count()), std::memory_order_relaxed);
}

void Metrics::Histogram::Render(std::string& out, std::string_view name,
                                std::string_view help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += buckets[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds[i], cumulative);
  }
  cumulative += buckets[bounds.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n", name, nanos.load(std::memory_order_relaxed) / 1e9);
  out += fmt::format("{}_count {}\n", name, cumulative);
}

void Metrics::ObserveReview(std::chrono::nanoseconds took) { reviews_.Observe(took); }

void Metrics::ObserveForward(std::chrono::nanoseconds took) { forwards_.Observe(took); }

void Metrics::ObserveQueueWait(double seconds) {
  queue_waits_.Observe(
      std::chrono::nanoseconds(static_cast<int64_t>(std::max(seconds, 0.0) * 1e9)));
}

void Metrics::IncMigFallback(std::string_view from, std::string_view to) {
  auto before = [](const FallbackPair& p, std::pair<std::string_view, std::string_view> key) {
    return std::pair<std::string_view, std::string_view>(p.from, p.to) < key;
  };
  std::lock_guard lock(fallbacks_mutex_);
  auto at = [&](std::string_view f, std::string_view t) {
    return std::lower_bound(fallbacks_.begin(), fallbacks_.end(), std::pair(f, t), before);
  };
  auto it = at(from, to);
  if (it == fallbacks_.end() || it->from != from || it->to != to) {
    if (fallbacks_.size() >= kMaxMigFallbackPairs) {
      from = to = kOtherProfile;
      it = at(from, to);
    }
    if (it == fallbacks_.end() || it->from != from || it->to != to) {
      it = fallbacks_.insert(it, FallbackPair{std::string(from), std::string(to)});
    }
  }
  ++it->count;
}

uint64_t Metrics::MigFallbacks(std::string_view from, std::string_view to) const {
  std::lock_guard lock(fallbacks_mutex_);
  auto it = std::find_if(fallbacks_.begin(), fallbacks_.end(),
                         [&](const FallbackPair& p) { return p.from == from && p.to == to; });
  return it == fallbacks_.end() ? 0 : it->count;
}

std::vector<Metrics::MigFallbackPair> Metrics::MigFallbackPairs() const {
  std::lock_guard lock(fallbacks_mutex_);
  std::vector<MigFallbackPair> pairs;
  pairs.reserve(fallbacks_.size());
  for (const FallbackPair& p : fallbacks_) pairs.push_back({p.from, p.to, p.count});
  return pairs;
}

std::string Metrics::Render() const {
  std::string out;
  std::string_view last_name;
  for (const CounterInfo& c : kCounters) {
    if (c.name != last_name) {
      out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", c.name, c.help, c.name);
      last_name = c.name;
    }
    uint64_t v = Value(c.counter);
    std::string value =
        c.per_unit == 1
            ? fmt::format("{}", v)
            : fmt::format("{}", static_cast<double>(v) / static_cast<double>(c.per_unit));
    out += c.labels.empty() ? fmt::format("{} {}\n", c.name, value)
                            : fmt::format("{}{{{}}} {}\n", c.name, c.labels, value);
  }
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", kDecisions, kDecisionsHelp, kDecisions);
  for (const DecisionPointName& d : kDecisionPointNames) {
    out += fmt::format("{}{{stage=\"{}\",outcome=\"{}\"}} {}\n", kDecisions, d.stage, d.outcome,
                       Decisions(d.point));
  }
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", kMigFallbacks, kMigFallbacksHelp,
                     kMigFallbacks);
  {
    std::lock_guard lock(fallbacks_mutex_);
    for (const FallbackPair& p : fallbacks_) {
      out += fmt::format("{}{{from_profile=\"{}\",to_profile=\"{}\"}} {}\n", kMigFallbacks,
                         PrometheusLabelValue(p.from), PrometheusLabelValue(p.to), p.count);
    }
  }
  reviews_.Render(out, "gpuadmit_review_duration_seconds",
                  "Time to decode, plan, patch and encode one review.");
  forwards_.Render(out, "gpuadmit_forward_duration_seconds",
                   "Time from forwarding a review to the leader to its answer (--leader-elect).");
  queue_waits_.Render(out, "gpuadmit_queue_wait_seconds",
                      "Time a pod waited behind the capacity gate, from its creation to the lift.");
  out +=
      "# HELP gpuadmit_queue_pods Pods held by the capacity gate, as this replica's inventory "
      "shows them.\n"
      "# TYPE gpuadmit_queue_pods gauge\n";
  out += fmt::format("gpuadmit_queue_pods {}\n", queue_waiting_.load(std::memory_order_relaxed));
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
  if (auto inventory = inventory_block_.load()) out += *inventory;
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
