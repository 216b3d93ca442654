// AdmissionHandler: the /mutate endpoint without HTTP. Checks what the transport must check
// (empty body, size, content type), runs core::Review on ONE snapshot and ONE policy loaded
// atomically, and never lets an exception out: a failure is answered by the failure mode.
//
//   AdmissionHandler handler(log, metrics);
//   handler.SetPolicy(policy); handler.SetSnapshot(snapshot);
//   HandlerAnswer a = handler.Handle("application/json", body);  // a.status, a.body
//
// Every review answered is kept in a DecisionLog (the last 200, and outcomes per minute) for the
// status page.
//
// Thread safety: Handle, Set*, Ready and the getters may be called concurrently from any thread.
// The snapshot, policy and GPU metrics are swapped whole; a request keeps what it loaded.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"
#include "core/policy/policy.h"
#include "webhook/admission/decision_log.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

// 7 MiB: above the apiserver's 3 MiB object limit with room for oldObject, and the bound.
inline constexpr size_t kMaxReviewBody = 7 * 1024 * 1024;

struct HandlerAnswer {
  int status = 200;
  std::string body;
  std::string_view content_type = "application/json";  // a literal: outlives the answer
  std::vector<std::string> trail;  // a 200 answer's decision trail, under SetExplain(true)
};

class AdmissionHandler {
 public:
  // `reservations` (optional) is where Pod decisions reserve devices; it must outlive the handler.
  AdmissionHandler(Logger& log, Metrics& metrics, Reservations* reservations = nullptr)
      : log_(log), metrics_(metrics), reservations_(reservations) {}
  // serve's: decisions reserve in `ledger`, each in its caller's scope (Handle's `scope`).
  AdmissionHandler(Logger& log, Metrics& metrics, SharedLedger* ledger)
      : log_(log), metrics_(metrics), reservations_(ledger), ledger_(ledger) {}

  void SetPolicy(std::shared_ptr<const Policy> policy) { policy_.store(std::move(policy)); }
  // Hands `snapshot` to the decisions that start after this call. serve publishes through
  // SnapshotPublisher, which also computes the snapshot's gauges.
  void SetSnapshot(std::shared_ptr<const InventorySnapshot> snapshot);

  // The newest GPU metrics (a GpuMetricsPoller's, node names already mapped); none or empty:
  // every allocatable GPU counts as idle.
  void SetGpuMetrics(std::shared_ptr<const ClusterGpuMetrics> metrics) {
    gpu_metrics_.store(std::move(metrics));
  }

  // Explain every candidate node in the trail even when debug logging is off, and answer the
  // trail in HandlerAnswer (review --explain); without it the trail goes to the decision log
  // alone. Set before serving.
  void SetExplain(bool explain) { explain_ = explain; }

  // `stale` says whether the inventory is too old to decide on (watch down too long).
  void SetStalenessCheck(std::function<bool()> stale) { stale_ = std::move(stale); }

  // Ready once a policy and a snapshot are loaded.
  bool Ready() const { return policy_.load() != nullptr && snapshot_.load() != nullptr; }

  // What the status page reads: the loaded policy, snapshot and GPU metrics (null before the
  // first), when the snapshot was handed over (ms since the epoch; 0 before), the recent reviews.
  std::shared_ptr<const Policy> policy() const { return policy_.load(); }
  std::shared_ptr<const InventorySnapshot> snapshot() const { return snapshot_.load(); }
  std::shared_ptr<const ClusterGpuMetrics> gpu_metrics() const { return gpu_metrics_.load(); }
  int64_t snapshot_at_unix_ms() const { return snapshot_at_ms_.load(std::memory_order_relaxed); }
  const DecisionLog& decision_log() const { return decision_log_; }

  // Answers one POST /mutate. 400: empty or undecodable body; 413: body over kMaxReviewBody;
  // 415: content type not application/json; 200: an AdmissionReview answer. `replica_share` > 1
  // decides on that fraction of each node's free devices (ReplicaShare): a replica without its
  // leader. `scope`: the caller's reservation scope in the SharedLedger ("": the authenticated
  // callers', and the one a plain Reservations has).
  HandlerAnswer Handle(std::string_view content_type, std::string_view body,
                       int64_t replica_share = 1, std::string_view scope = {});

 private:
  HandlerAnswer Reject(int status, Counter counter, std::string reason);

  Logger& log_;
  Metrics& metrics_;
  Reservations* reservations_;
  SharedLedger* ledger_ = nullptr;  // reservations_ with its scopes, where serve gave one
  std::function<bool()> stale_;  // set before serving, read-only after
  bool explain_ = false;         // likewise
  std::atomic<std::shared_ptr<const Policy>> policy_;
  std::atomic<std::shared_ptr<const InventorySnapshot>> snapshot_;
  std::atomic<std::shared_ptr<const ClusterGpuMetrics>> gpu_metrics_;
  std::atomic<int64_t> snapshot_at_ms_{0};
  DecisionLog decision_log_;
};

// True for "application/json", with any parameters ("; charset=utf-8") and in any case.
bool IsJsonContentType(std::string_view content_type);

}  // namespace gpuadmit
