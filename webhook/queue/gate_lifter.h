// GateLifter: the live half of the capacity queue (waiting for GPUs). The admission
// gates a GPU pod that fits nowhere it may use (core/plan/queue_gate.h) with the scheduling gate
// <prefix>/capacity; the scheduler then leaves it alone. Every pass (1 s), on the leader only,
// the lifter rebuilds the queue from the latest inventory snapshot (live_queue.h), asks
// CapacityQueue::Lift which pods to release (priority, then arrival; best fit; the head holds
// the node closest to fitting, and pods behind it backfill only elsewhere), and releases each by
// PATCHing the pod (gate_patch.h):
//   - capacity: the gate removed, a required node affinity onto the node the queue counted it
//     on (so the scheduler binds it where the room is), the <prefix>/queue annotation;
//   - timeout (policy queue.timeout) or unplaceable (no node it may use could ever hold it): the
//     gate removed, no affinity, the annotation, and a Warning Event (queue_event.h), so
//     `kubectl describe pod` says capacity never came;
//   - disabled: the policy no longer queues the pod's namespace (or the queue is off): released
//     at once, so no pod stays gated by a policy that no longer says why.
// Each patch carries the resourceVersion just read (a GET first): a pod changed meanwhile
// answers 409 and is read again next pass. A pod released but not yet seen released by the
// snapshot keeps its room taken on its node for up to 30 s (in flight), so two passes do not
// count on the same room. Nothing else is kept between passes: a new leader rebuilds the same
// queue from the API, and a pod another leader already released is skipped (its GET shows no
// gate).
//
//   GateLifter lifter(client, handler, log, metrics, {.instance = id, .leading = is_leader});
//   lifter.Start();  ...  lifter.Stop();
//
// Thread safety: Start and Stop from one thread; RunOnce from one thread at a time (the
// lifter's own after Start). The client is the lifter's alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/inventory/capacity_queue.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/kube/kube_client.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

struct GateLifterOptions {
  // 1 s: a freed GPU is offered to the queue within a second, about as soon as the scheduler
  // would retry a pending pod; a pass costs O(nodes + gated pods), on the leader only.
  std::chrono::milliseconds interval{1000};
  std::string instance;  // this replica (--id): the Events' reportingInstance
  // Whether this replica lifts now (the leader); null: always (a single replica).
  std::function<bool()> leading;
  // Milliseconds since the epoch; null: the system clock. Arrival is the pods' creationTimestamp,
  // on the apiserver's clock: waits are off by the skew between the two.
  std::function<int64_t()> now_unix_ms;
};

class GateLifter {
 public:
  GateLifter(KubeClient& api, const AdmissionHandler& handler, Logger& log, Metrics& metrics,
             GateLifterOptions options);
  ~GateLifter();
  GateLifter(const GateLifter&) = delete;
  GateLifter& operator=(const GateLifter&) = delete;

  void Start();
  // Ends the loop after the pass in progress. Idempotent.
  void Stop();

  struct Pass {
    size_t waiting = 0;             // pods gated with the capacity gate after the pass
    std::vector<LiftedPod> lifted;  // released (patched) this pass, in queue order
    size_t conflicts = 0;           // 409: the pod changed since it was read; next pass
    size_t failures = 0;            // any other error; next pass
  };
  // One pass; Start's thread runs one every interval, tests call it directly.
  Pass RunOnce();

 private:
  struct InFlight {
    std::string node;  // "" for a release without a node (timeout, unplaceable, disabled)
    ResourceList ask;
    int64_t at_ms = 0;
  };
  // GET, PATCH (the gate removed, `note` set as an annotation, pinned to `node` unless empty),
  // and an Event for a timeout or an unplaceable pod: true when the pod was released by this call.
  bool Release(const LiftedPod& lift, const std::string& node, const std::string& gate,
               const std::pair<std::string, std::string>& note, Pass& pass);
  void NoteFailure(const std::string& key, const std::string& why);
  int64_t NowMs() const;
  void Run();

  KubeClient& api_;
  const AdmissionHandler& handler_;
  Logger& log_;
  Metrics& metrics_;
  GateLifterOptions options_;
  std::map<std::string, InFlight> in_flight_;  // by pod key
  int64_t last_failure_log_ms_ = 0;
  size_t failures_unlogged_ = 0;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpuadmit
