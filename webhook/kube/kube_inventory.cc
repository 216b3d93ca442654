#include "webhook/kube/kube_inventory.h"

#include <optional>

#include "core/kube/kube_objects.h"

namespace gpuadmit {

// Adapts reflector callbacks to ClusterState, for nodes or for pods. A relist is staged
// outside the lock and swapped in whole, so decisions never see half a list.
class KubeInventory::Sink final : public ReflectorSink {
 public:
  Sink(KubeInventory& owner, bool pods) : owner_(owner), pods_(pods) {}

  void BeginReplace() override {
    staged_nodes_.clear();
    staged_pods_.clear();
  }
  void Add(JsonView object) override {
    if (pods_) {
      staged_pods_.push_back(ReadPod(object, owner_.options_.reservation_annotation));
    } else {
      staged_nodes_.push_back(ReadNode(object));
    }
  }
  void CommitReplace() override {
    {
      std::lock_guard<std::mutex> lock(owner_.state_mu_);
      if (pods_) {
        owner_.state_.ReplacePods(std::move(staged_pods_));
      } else {
        owner_.state_.ReplaceNodes(std::move(staged_nodes_));
      }
      // Under the state's lock, so the publisher sees the list and this flag together.
      listed_ = true;
    }
    BeginReplace();
    owner_.MarkDirty();
  }
  bool listed() const { return listed_; }  // state_mu_ held
  void AbortReplace() override { BeginReplace(); }
  void Apply(std::string_view type, JsonView object) override {
    // Read outside the lock: the publisher may hold it while it builds a snapshot.
    std::optional<PodRecord> pod;
    std::optional<NodeFacts> node;
    if (pods_ && type != "DELETED") pod = ReadPod(object, owner_.options_.reservation_annotation);
    if (!pods_) node = ReadNode(object);
    std::lock_guard<std::mutex> lock(owner_.state_mu_);
    ClusterState& state = owner_.state_;
    if (pods_) {
      if (type == "DELETED") {
        state.DeletePod(ObjectKey(object));
      } else {
        state.UpsertPod(std::move(*pod));
      }
    } else if (type == "DELETED") {
      state.DeleteNode(node->name);
    } else {
      state.UpsertNode(std::move(*node));
    }
    owner_.MarkDirtyLocked();
  }

 private:
  KubeInventory& owner_;
  bool pods_;
  bool listed_ = false;  // guarded by the owner's state_mu_
  std::vector<NodeFacts> staged_nodes_;
  std::vector<PodRecord> staged_pods_;
};

KubeInventory::KubeInventory(KubeApi& nodes_api, KubeApi& pods_api, const Clock& clock, Logger& log,
                             KubeInventoryOptions options, Publish publish, SharedLedger* ledger)
    : clock_(clock),
      log_(log),
      options_(std::move(options)),
      publish_(std::move(publish)),
      ledger_(ledger),
      state_(options_.reservation_annotation) {
  node_sink_ = std::make_unique<Sink>(*this, false);
  pod_sink_ = std::make_unique<Sink>(*this, true);
  ReflectorOptions nodes = options_.nodes;
  nodes.path = "/api/v1/nodes";
  ReflectorOptions pods = options_.pods;
  pods.path = "/api/v1/pods";
  pods.field_selector = std::string(kNonTerminalPods);
  nodes_ = std::make_unique<Reflector>(nodes_api, clock, log, nodes, *node_sink_);
  pods_ = std::make_unique<Reflector>(pods_api, clock, log, pods, *pod_sink_);
}

std::map<std::string, std::string, std::less<>> KubeInventory::NodesOfPodsNamed(
    const std::set<std::string, std::less<>>& names) {
  std::lock_guard<std::mutex> lock(state_mu_);
  return state_.NodesOfPodsNamed(names);
}

void KubeInventory::CopyObjects(std::vector<NodeFacts>& nodes, std::vector<PodRecord>& pods) {
  std::lock_guard<std::mutex> lock(state_mu_);
  nodes = state_.Nodes();
  pods = state_.Pods();
}

KubeInventory::~KubeInventory() { Stop(); }

void KubeInventory::Start() {
  threads_.emplace_back([this] { nodes_->Run(); });
  threads_.emplace_back([this] { pods_->Run(); });
  threads_.emplace_back([this] { PublishLoop(); });
}

void KubeInventory::Stop() {
  if (stopping_.exchange(true)) return;
  nodes_->Stop();
  pods_->Stop();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    changed_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool KubeInventory::Stale() const {
  auto now = clock_.Now();
  for (const Reflector* r : {nodes_.get(), pods_.get()}) {
    auto down = r->DownSince();
    if (down != std::chrono::steady_clock::time_point{} && now - down > options_.staleness_limit) {
      return true;
    }
  }
  return false;
}

void KubeInventory::MarkDirty() {
  std::lock_guard<std::mutex> lock(state_mu_);
  MarkDirtyLocked();
}

void KubeInventory::MarkDirtyLocked() {
  // Only the first change after a publish wakes the publisher; the rest ride along.
  if (dirty_) return;
  dirty_ = true;
  changed_.notify_all();
}

void KubeInventory::PublishLoop() {
  std::unique_lock<std::mutex> lock(state_mu_);
  while (!stopping_.load()) {
    changed_.wait(lock, [this] { return dirty_ || stopping_.load(); });
    if (stopping_.load()) return;
    if (!node_sink_->listed() || !pod_sink_->listed()) {
      // Until both kinds are listed a snapshot would show nodes without their pods (all free).
      dirty_ = false;
      continue;
    }
    dirty_ = false;
    auto snapshot = std::make_shared<const InventorySnapshot>(state_.Snapshot(++version_));
    std::vector<std::string> arrived = state_.TakeArrivedReservations();
    lock.unlock();
    if (!published_synced_.exchange(true)) log_.Info("inventory synced");
    publish_(std::move(snapshot));
    if (ledger_ != nullptr) ledger_->Release(arrived);
    lock.lock();
    // Let a burst of events gather into the next snapshot.
    changed_.wait_for(lock, options_.publish_interval, [this] { return stopping_.load(); });
  }
}

}  // namespace gpuadmit
