// SnapshotPublisher: where a new inventory snapshot goes live. Publish hands it to the handler's
// decisions first, then computes its gauges (O(nodes), on the caller's thread: the watch's, the
// cluster file reloader's) and renders them for /metrics; the status page reads the cluster-wide
// gauges back.
//
//   SnapshotPublisher publisher(handler, metrics, &ledger, {.per_node = false});
//   publisher.Publish(snapshot);     // KubeInventory's callback, ClusterFileSource's load
//   publisher.gauges()->cluster;     // the status page
//
// Thread safety: Publish is called by one publisher at a time; gauges() from any thread.
#pragma once

#include <atomic>
#include <memory>

#include "core/inventory/inventory.h"
#include "core/inventory/inventory_gauges.h"
#include "core/inventory/reservation_ledger.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

class SnapshotPublisher {
 public:
  struct Options {
    bool per_node = false;  // also export every gauge per node, with a `node` label
  };

  // `reserved` (optional) is the ledger whose totals count as reserved; it, `handler` and
  // `metrics` must outlive the publisher.
  SnapshotPublisher(AdmissionHandler& handler, Metrics& metrics, const Reservations* reserved,
                    Options options)
      : handler_(handler), metrics_(metrics), reserved_(reserved), options_(options) {}

  void Publish(std::shared_ptr<const InventorySnapshot> snapshot);

  AdmissionHandler& handler() const { return handler_; }

  // The last published snapshot's cluster-wide gauges (null before the first; no per-node ones).
  std::shared_ptr<const InventoryGauges> gauges() const { return gauges_.load(); }

 private:
  AdmissionHandler& handler_;
  Metrics& metrics_;
  const Reservations* reserved_;
  Options options_;
  std::atomic<std::shared_ptr<const InventoryGauges>> gauges_;
};

}  // namespace gpuadmit
