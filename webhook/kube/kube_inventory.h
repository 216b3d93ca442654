// KubeInventory: the live inventory. Reflectors (nodes; non-terminal pods; with DRA,
// ResourceSlices, ResourceClaims, DeviceClasses, ResourceClaimTemplates) mirror the cluster into
// one ClusterState,
// and a publisher thread turns it into a new InventorySnapshot after changes, at most once per publish interval, hands it to the request path, and releases
// the reservations of pods that have arrived.
//
//   KubeInventory inventory(*nodes_api, *pods_api, clock, log, {},
//                           [&](auto snapshot) { handler.SetSnapshot(snapshot); }, &ledger);
//   inventory.Start();  ...  inventory.Synced(); inventory.Stale();  ...  inventory.Stop();
//
// Thread safety: Start and Stop from one thread; Synced, Stale and counters from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/inventory/cluster_state.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/kube/kube_api.h"
#include "webhook/kube/reflector.h"
#include "webhook/os/clock.h"
#include "webhook/telemetry/log.h"

namespace gpuadmit {

struct KubeInventoryOptions {
  std::string reservation_annotation = "gpuadmit.io/reservation";
  // 50 ms: a decision sees a pod within a twentieth of a second of its event, and a burst of
  // thousands of events costs one snapshot, not thousands.
  std::chrono::milliseconds publish_interval{50};
  // After this long without a working watch, decisions that need free counts are skipped.
  std::chrono::milliseconds staleness_limit{60000};
  ReflectorOptions nodes;  // path and fields are filled in by the constructor
  ReflectorOptions pods;
};

// Clients for the DRA kinds (resource.k8s.io/v1), one each: each reflector holds a watch open.
struct DraApis {
  KubeApi& slices;
  KubeApi& claims;
  KubeApi& classes;
  KubeApi& templates;
};

class KubeInventory {
 public:
  using Publish = std::function<void(std::shared_ptr<const InventorySnapshot>)>;

  // `nodes_api` and `pods_api` are separate clients: each reflector holds a watch open. With
  // `dra`, ResourceSlices, ResourceClaims, DeviceClasses and ResourceClaimTemplates are watched too, and a snapshot waits
  // for their lists as for the others.
  KubeInventory(KubeApi& nodes_api, KubeApi& pods_api, const Clock& clock, Logger& log,
                KubeInventoryOptions options, Publish publish, SharedLedger* ledger,
                const DraApis* dra = nullptr);
  ~KubeInventory();

  void Start();
  void Stop();

  // Both kinds fully listed once, and that state published (or being handed over).
  bool Synced() const { return published_synced_.load(); }
  // A watch has been down longer than the staleness limit.
  bool Stale() const;
  uint64_t snapshots_published() const { return version_.load(); }
  // ClusterState::NodesOfPodsNamed under the state lock: for the GPU metrics poller, every poll
  // (not every event), to join dcgm-exporter hosts named after their pods to nodes.
  std::map<std::string, std::string, std::less<>> NodesOfPodsNamed(
      const std::set<std::string, std::less<>>& names);
  // Copies of every node, pod and DRA object (ClusterState::Nodes, Pods, dra) under the state
  // lock: for GET /report, on request. Events wait meanwhile (tens of ms at 150,000 pods).
  void CopyObjects(std::vector<NodeFacts>& nodes, std::vector<PodRecord>& pods, DraDevices& dra);

 private:
  class Sink;
  enum class Kind { kNodes, kPods, kSlices, kClaims, kClasses, kTemplates };
  // Adds a reflector of `kind` over `api` (from the constructor only).
  void Watch(KubeApi& api, const ReflectorOptions& options, Kind kind);
  void PublishLoop();
  void MarkDirty();
  void MarkDirtyLocked();  // state_mu_ held

  const Clock& clock_;
  Logger& log_;
  KubeInventoryOptions options_;
  Publish publish_;
  SharedLedger* ledger_;

  std::mutex state_mu_;  // guards state_ and dirty_
  ClusterState state_;
  bool dirty_ = false;
  std::condition_variable changed_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> published_synced_{false};
  std::atomic<uint64_t> version_{0};

  std::vector<std::unique_ptr<Sink>> sinks_;  // one per kind watched, nodes and pods first
  std::vector<std::unique_ptr<Reflector>> reflectors_;
  std::vector<std::thread> threads_;
};

}  // namespace gpuadmit
