#include "webhook/kube/kube_inventory.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "core/dra/dra_objects.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit {

// Adapts reflector callbacks to ClusterState, for one kind. A relist is staged outside the lock
// and swapped in whole, so decisions never see half a list.
class KubeInventory::Sink final : public ReflectorSink {
 public:
  Sink(KubeInventory& owner, Kind kind) : owner_(owner), kind_(kind) {}

  void BeginReplace() override {
    staged_nodes_.clear();
    staged_pods_.clear();
    staged_slices_.clear();
    staged_claims_.clear();
    staged_classes_.clear();
    staged_templates_.clear();
  }
  void Add(JsonView object) override {
    switch (kind_) {
      case Kind::kNodes:
        staged_nodes_.push_back(ReadNode(object));
        break;
      case Kind::kPods:
        staged_pods_.push_back(ReadPod(object, owner_.options_.reservation_annotation));
        break;
      case Kind::kSlices:
        staged_slices_.push_back(ReadResourceSlice(object));
        break;
      case Kind::kClaims:
        staged_claims_.push_back(ReadResourceClaim(object));
        break;
      case Kind::kClasses:
        staged_classes_.push_back(ReadDeviceClass(object));
        break;
      case Kind::kTemplates:
        staged_templates_.push_back(ReadClaimTemplate(object));
        break;
    }
  }
  void CommitReplace() override {
    {
      std::lock_guard<std::mutex> lock(owner_.state_mu_);
      ClusterState& state = owner_.state_;
      switch (kind_) {
        case Kind::kNodes:
          state.ReplaceNodes(std::move(staged_nodes_));
          break;
        case Kind::kPods:
          state.ReplacePods(std::move(staged_pods_));
          break;
        case Kind::kSlices:
          state.EditDra([&](DraDevices& d) { d.ReplaceSlices(std::move(staged_slices_)); });
          break;
        case Kind::kClaims:
          state.EditDra([&](DraDevices& d) { d.ReplaceClaims(std::move(staged_claims_)); });
          break;
        case Kind::kClasses:
          state.EditDra([&](DraDevices& d) { d.ReplaceClasses(std::move(staged_classes_)); });
          break;
        case Kind::kTemplates:
          state.EditDra([&](DraDevices& d) { d.ReplaceTemplates(std::move(staged_templates_)); });
          break;
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
    const bool deleted = type == "DELETED";
    std::optional<PodRecord> pod;
    std::optional<NodeFacts> node;
    std::optional<ResourceSliceRecord> slice;
    std::optional<ResourceClaimRecord> claim;
    std::optional<DeviceClassRecord> device_class;
    std::optional<ClaimTemplateRecord> claim_template;
    switch (kind_) {
      case Kind::kNodes:
        node = ReadNode(object);
        break;
      case Kind::kPods:
        if (!deleted) pod = ReadPod(object, owner_.options_.reservation_annotation);
        break;
      case Kind::kSlices:
        slice = ReadResourceSlice(object);
        break;
      case Kind::kClaims:
        claim = ReadResourceClaim(object);
        break;
      case Kind::kClasses:
        device_class = ReadDeviceClass(object);
        break;
      case Kind::kTemplates:
        claim_template = ReadClaimTemplate(object);
        break;
    }
    std::lock_guard<std::mutex> lock(owner_.state_mu_);
    ClusterState& state = owner_.state_;
    switch (kind_) {
      case Kind::kNodes:
        deleted ? state.DeleteNode(node->name) : state.UpsertNode(std::move(*node));
        break;
      case Kind::kPods:
        deleted ? state.DeletePod(ObjectKey(object)) : state.UpsertPod(std::move(*pod));
        break;
      case Kind::kSlices:
        state.EditDra([&](DraDevices& d) {
          deleted ? d.DeleteSlice(slice->name) : d.UpsertSlice(std::move(*slice));
        });
        break;
      case Kind::kClaims:
        if (deleted) {
          state.EditDra([&](DraDevices& d) { d.DeleteClaim(claim->key); });
        } else {
          state.UpsertClaim(std::move(*claim));
        }
        break;
      case Kind::kClasses:
        state.EditDra([&](DraDevices& d) {
          deleted ? d.DeleteClass(device_class->name) : d.UpsertClass(std::move(*device_class));
        });
        break;
      case Kind::kTemplates:
        state.EditDra([&](DraDevices& d) {
          deleted ? d.DeleteTemplate(claim_template->key)
                  : d.UpsertTemplate(std::move(*claim_template));
        });
        break;
    }
    owner_.MarkDirtyLocked();
  }

 private:
  KubeInventory& owner_;
  Kind kind_;
  bool listed_ = false;  // guarded by the owner's state_mu_
  std::vector<NodeFacts> staged_nodes_;
  std::vector<PodRecord> staged_pods_;
  std::vector<ResourceSliceRecord> staged_slices_;
  std::vector<ResourceClaimRecord> staged_claims_;
  std::vector<DeviceClassRecord> staged_classes_;
  std::vector<ClaimTemplateRecord> staged_templates_;
};

KubeInventory::KubeInventory(KubeApi& nodes_api, KubeApi& pods_api, const Clock& clock, Logger& log,
                             KubeInventoryOptions options, Publish publish, SharedLedger* ledger,
                             const DraApis* dra)
    : clock_(clock),
      log_(log),
      options_(std::move(options)),
      publish_(std::move(publish)),
      ledger_(ledger),
      state_(options_.reservation_annotation) {
  ReflectorOptions nodes = options_.nodes;
  nodes.path = "/api/v1/nodes";
  ReflectorOptions pods = options_.pods;
  pods.path = "/api/v1/pods";
  pods.field_selector = std::string(kNonTerminalPods);
  Watch(nodes_api, nodes, Kind::kNodes);
  Watch(pods_api, pods, Kind::kPods);
  if (dra == nullptr) return;
  // The DRA kinds back off and relist with the nodes' timings.
  for (auto [api, path, kind] :
       {std::tuple{&dra->slices, "/apis/resource.k8s.io/v1/resourceslices", Kind::kSlices},
        std::tuple{&dra->claims, "/apis/resource.k8s.io/v1/resourceclaims", Kind::kClaims},
        std::tuple{&dra->classes, "/apis/resource.k8s.io/v1/deviceclasses", Kind::kClasses},
        std::tuple{&dra->templates, "/apis/resource.k8s.io/v1/resourceclaimtemplates",
                   Kind::kTemplates}}) {
    ReflectorOptions o = options_.nodes;
    o.path = path;
    o.absent_is_empty = true;  // a cluster without DRA, or a ClusterRole without its rules
    Watch(*api, o, kind);
  }
}

void KubeInventory::Watch(KubeApi& api, const ReflectorOptions& options, Kind kind) {
  auto& sink = sinks_.emplace_back(std::make_unique<Sink>(*this, kind));
  reflectors_.push_back(std::make_unique<Reflector>(api, clock_, log_, options, *sink));
}

std::map<std::string, std::string, std::less<>> KubeInventory::NodesOfPodsNamed(
    const std::set<std::string, std::less<>>& names) {
  std::lock_guard<std::mutex> lock(state_mu_);
  return state_.NodesOfPodsNamed(names);
}

void KubeInventory::CopyObjects(std::vector<NodeFacts>& nodes, std::vector<PodRecord>& pods,
                                DraDevices& dra) {
  std::lock_guard<std::mutex> lock(state_mu_);
  nodes = state_.Nodes();
  pods = state_.Pods();
  dra = state_.dra();
}

KubeInventory::~KubeInventory() { Stop(); }

void KubeInventory::Start() {
  for (auto& r : reflectors_) threads_.emplace_back([reflector = r.get()] { reflector->Run(); });
  threads_.emplace_back([this] { PublishLoop(); });
}

void KubeInventory::Stop() {
  if (stopping_.exchange(true)) return;
  for (auto& r : reflectors_) r->Stop();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    changed_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool KubeInventory::Stale() const {
  auto now = clock_.Now();
  for (const auto& r : reflectors_) {
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
    if (!std::all_of(sinks_.begin(), sinks_.end(), [](const auto& s) { return s->listed(); })) {
      // Until every kind is listed a snapshot would show nodes without their pods (all free),
      // or without their DRA devices.
      dirty_ = false;
      continue;
    }
    dirty_ = false;
    auto snapshot = std::make_shared<const InventorySnapshot>(state_.Snapshot(++version_));
    std::vector<std::string> arrived = state_.TakeArrivedReservations();
    std::set<std::string, std::less<>> waiting = state_.WaitingClaimReservations();
    lock.unlock();
    if (!published_synced_.exchange(true)) log_.Info("inventory synced");
    publish_(std::move(snapshot));
    if (ledger_ != nullptr) {
      ledger_->Release(arrived);
      ledger_->KeepWhileWaiting(waiting);
    }
    lock.lock();
    // Let a burst of events gather into the next snapshot.
    changed_.wait_for(lock, options_.publish_interval, [this] { return stopping_.load(); });
  }
}

}  // namespace gpuadmit
