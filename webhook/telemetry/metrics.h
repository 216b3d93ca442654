// Metrics: every series gpuadmit exports is declared once, in kCounters (metrics.cc), and
// rendered in the Prometheus text format on GET /metrics. The one family whose label values are
// not known in advance, gpuadmit_mig_fallbacks_total, is declared beside the table.
//
//   metrics.Inc(Counter::kReviewsPatched);
//   metrics.ObserveReview(std::chrono::microseconds(42));
//   metrics.IncMigFallback("2g.20gb", "1g.10gb");
//
// The inventory gauges (gpuadmit_cluster_resource_*, gpuadmit_mig_stranded_slices,
// gpuadmit_inventory_last_update_timestamp_seconds) are rendered once per published snapshot by
// SetInventory, and /metrics copies that text: a scrape does no work proportional to nodes.
//
// Thread safety: every method may be called from any thread. Counters and histograms are relaxed
// atomics; the MIG fallback pairs sit behind a mutex, taken only when a pod falls back and when
// /metrics is rendered; the inventory block is swapped whole through an atomic shared_ptr.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/decision_point.h"

namespace gpuadmit {

enum class Counter {
  kReviewsAllowed,
  kReviewsPatched,
  kReviewsDenied,
  kReviewsFailOpen,        // degraded: gpuadmit could not decide and let the object pass
  kReviewsFailClosed,      // degraded: gpuadmit could not decide and denied (failureMode closed)
  kBadRequests,            // 400: body not a decodable AdmissionReview
  kUnsupportedMedia,       // 415
  kPayloadTooLarge,        // 413
  kOverCapacity,           // degraded: 503, a connection beyond --max-connections refused
  kHandlerPanics,          // degraded: an exception escaped the review and was answered fail-open
  kSkippedStale,           // degraded: a GPU decision skipped because the inventory is stale
  kClusterReloadFailures,  // degraded: a changed --cluster file did not load; the last stays
  kPolicyReloads,          // a changed --policy file validated and took effect
  kPolicyReloadFailures,   // degraded: a changed --policy file did not validate; the last stays
  kCertReloads,            // changed --tls-cert/--tls-key files loaded; new handshakes use them
  kCertReloadFailures,     // degraded: changed certificate files were refused; the last stays
  kSnapshots,              // an inventory snapshot was handed to decisions
  kLeaderTransitions,      // --leader-elect: this replica started leading
  kForwardedAnswered,      // --leader-elect: a review forwarded to the leader, its answer passed on
  kForwardNoLeader,        // degraded: no leader known; decided here
  kForwardLeaderFailed,    // degraded: the leader did not answer in time (or refused); decided here
  kForwardMarkIgnored,     // a review marked as forwarded by a client that is not a peer replica
  // gpuadmit_queue_lifts_total{reason}: capacity gates the leader lifted (webhook/queue).
  kQueueLiftsCapacity,
  kQueueLiftsTimeout,
  kQueueLiftsUnplaceable,
  kQueueLiftsDisabled,
  kQueueLiftConflicts,  // a lift met 409 (the pod changed since it was read); retried
  kQueueLiftFailures,   // degraded: a lift failed otherwise (API error, RBAC); retried
  // gpuadmit_sharing_mode_applied_total{mode}: the sharing mode a pod spec was given.
  kSharingModeExclusive,
  kSharingModeMig,
  kSharingModeMps,
  kSharingModeTimeSlicing,
  kMigEligiblePods,  // MIG-eligible: one GPU, a memory need below sharing.migBelow, not training
  kGpuSavingsMicro,  // estimated whole GPUs not taken, in millionths (shown in GPUs)
  kCount,
};

class Metrics {
 public:
  void Inc(Counter c) { Add(c, 1); }
  void Add(Counter c, uint64_t n) {
    counters_[static_cast<size_t>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Value(Counter c) const {
    return counters_[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
  // gpuadmit_decisions_total{stage,outcome}: what the planning stages did, per pod spec planned,
  // and per review (the review stage); labelled from core/decision_point.h.
  void AddDecision(DecisionPoint p, uint64_t n) {
    decisions_[static_cast<size_t>(p)].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Decisions(DecisionPoint p) const {
    return decisions_[static_cast<size_t>(p)].load(std::memory_order_relaxed);
  }
  void ObserveReview(std::chrono::nanoseconds took);
  // A review forwarded to the leader: from sending it to its answer (--leader-elect).
  void ObserveForward(std::chrono::nanoseconds took);
  // A capacity gate lifted after the pod waited `seconds` (gpuadmit_queue_wait_seconds).
  void ObserveQueueWait(double seconds);
  // gpuadmit_queue_pods: pods held by the capacity gate, as this replica's inventory shows them.
  void SetQueueWaiting(int64_t pods) { queue_waiting_.store(pods, std::memory_order_relaxed); }
  std::string Render() const;

  // gpuadmit_mig_fallbacks_total{from_profile,to_profile}: a pod asking for MIG profile `from`
  // (e.g. "2g.20gb") was given `to` ("1g.10gb"). A series per pair seen, rendered sorted; pairs
  // beyond kMaxMigFallbackPairs count under from_profile="other",to_profile="other".
  void IncMigFallback(std::string_view from, std::string_view to);
  // The count of one pair; 0 when it was never seen.
  uint64_t MigFallbacks(std::string_view from, std::string_view to) const;
  struct MigFallbackPair {
    std::string from;
    std::string to;
    uint64_t count = 0;
  };
  // Every pair seen, sorted by (from, to) (GET /report's MIG layout pressure).
  std::vector<MigFallbackPair> MigFallbackPairs() const;
  // 128: the built-in catalog's seven products have at most 6 profiles each, at most 15 pairs
  // each and 93 in all even with no name shared; the rest is room for the policy's products.
  static constexpr size_t kMaxMigFallbackPairs = 128;

  // gpuadmit_build_info{LABELS} 1: what this binary is, as `key="value",...` (see
  // BuildInfoLabels in webhook/cli/build_info.h). Set once, before the metrics are served.
  void SetBuildInfo(std::string labels) { build_labels_ = std::move(labels); }

  // gpuadmit_certificate_expiry_timestamp_seconds: the presented serving certificate's notAfter,
  // in seconds since the epoch; set at start and after each reload that took. Absent until set.
  // gpuadmit_leader: 1 while this replica holds the leader election Lease, 0 while it follows
  // (and always 0 without --leader-elect).
  void SetLeader(bool leading) { leader_.store(leading ? 1 : 0, std::memory_order_relaxed); }

  void SetCertificateExpiry(int64_t unix_seconds) {
    certificate_expiry_.store(unix_seconds, std::memory_order_relaxed);
  }
  int64_t CertificateExpiry() const {  // 0: not set
    return certificate_expiry_.load(std::memory_order_relaxed);
  }

  // One series of each inventory gauge family: a resource's counts, cluster-wide (`node` empty)
  // or on one node (core/inventory/inventory_gauges.h defines them).
  struct ResourceSeries {
    std::string node;
    std::string resource;
    int64_t allocatable = 0, used = 0, queued = 0, reserved = 0, free = 0, dra = 0;
  };
  struct StrandedSeries {
    std::string node;  // "": cluster-wide
    std::string profile;
    int64_t slices = 0;
  };
  // The gauges of the snapshot just handed to decisions, published at `unix_seconds`: renders
  // gpuadmit_cluster_resource_{allocatable,used,queued,reserved,free,dra_allocatable}{[node,]resource},
  // gpuadmit_mig_stranded_slices{[node,]profile} (in the order given) and
  // gpuadmit_inventory_last_update_timestamp_seconds, and swaps that text in whole. Absent from
  // /metrics until the first call. Called by the snapshot's publisher, never per scrape.
  void SetInventory(const std::vector<ResourceSeries>& resources,
                    const std::vector<StrandedSeries>& stranded, int64_t unix_seconds);

  // Review latency buckets in seconds, from 50 us (a review on a small cluster) to 5 s: up to the
  // webhook's timeoutSeconds (5), so a p99 near it (the monitoring overlay's alert) is visible.
  static constexpr std::array<double, 12> kBuckets = {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3,
                                                      5e-3,  10e-3,  100e-3, 1.0,    2.5,  5.0};
  // Queue wait buckets in seconds, from a lift within a pass (1 s) to the longest timeout the
  // policy allows (24 h).
  static constexpr std::array<double, 12> kQueueWaitBuckets = {1,   5,   15,   30,   60,    120,
                                                               300, 600, 1800, 3600, 21600, 86400};

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Counter::kCount)> counters_{};
  std::array<std::atomic<uint64_t>, kDecisionPoints> decisions_{};
  struct Histogram {
    explicit Histogram(const std::array<double, 12>& b) : bounds(b) {}
    const std::array<double, 12>& bounds;
    std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> nanos{0};
    void Observe(std::chrono::nanoseconds took);
    void Render(std::string& out, std::string_view name, std::string_view help) const;
  };
  Histogram reviews_{kBuckets};
  Histogram forwards_{kBuckets};
  Histogram queue_waits_{kQueueWaitBuckets};
  std::atomic<int64_t> queue_waiting_{0};
  std::string build_labels_;
  std::atomic<int64_t> certificate_expiry_{0};  // 0: not set
  std::atomic<int> leader_{0};
  std::atomic<std::shared_ptr<const std::string>> inventory_block_;  // null until SetInventory
  struct FallbackPair {
    std::string from;
    std::string to;
    uint64_t count = 0;
  };
  mutable std::mutex fallbacks_mutex_;
  std::vector<FallbackPair> fallbacks_;  // sorted by (from, to); guarded by fallbacks_mutex_
};

// GET /metrics, /healthz or /readyz, as both of serve's listeners (--listen, --metrics-listen)
// answer it. `ready`: readiness for /readyz (a policy and an inventory, and not stopping).
struct ProbeAnswer {
  int status;
  std::string_view content_type;
  std::string body;
};
inline constexpr std::array<std::string_view, 3> kProbePaths = {"/metrics", "/healthz", "/readyz"};
bool IsProbePath(std::string_view path);

// A label value as the Prometheus text format wants it: backslash, double quote and newline
// escaped.
std::string PrometheusLabelValue(std::string_view v);
ProbeAnswer AnswerProbe(std::string_view path, bool ready, const Metrics& metrics);

}  // namespace gpuadmit
