// The live inventory against a fake Kubernetes API server: initial sync in pages, watch events,
// bookmarks, 410 in the middle of a watch, a dropped connection, a slow server, staleness, and
// reservations released when their pods arrive. Each case asserts the published snapshot.
#include "webhook/kube/kube_inventory.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/json/yaml_json.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/wait_until.h"
#include "webhook/kube/kube_client.h"
#include "webhook/os/read_file.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

std::vector<json> ItemsOfKind(const json& list, const std::string& kind) {
  std::vector<json> out;
  for (const json& item : list["items"]) {
    if (item["kind"] == kind) out.push_back(item);
  }
  return out;
}

json GpuPod(const std::string& name, const std::string& node, const std::string& phase,
            const std::string& resource, const std::string& rv) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", rv}}},
          {"spec",
           {{"nodeName", node},
            {"containers", {{{"name", "c"}, {"resources", {{"limits", {{resource, "1"}}}}}}}}}},
          {"status", {{"phase", phase}}}};
}

class KubeInventoryTest : public ::testing::Test {
 protected:
  KubeInventoryTest() {
    json demo = testing::DemoCluster();
    api_.SetObjects("nodes", ItemsOfKind(demo, "Node"), "100");
    // Terminal pods are left out by the field selector; the fake honours it.
    api_.SetObjects("pods", ItemsOfKind(demo, "Pod"), "100");
  }

  void Start(KubeInventoryOptions options = {}, bool dra = false) {
    KubeConfig config;
    config.server = api_.url();
    config.certificate_authority = PemSource{ReadWholeFile(api_.ca_file()).value(), api_.ca_file()};
    config.token = "secret";
    nodes_client_ = KubeClient::Create(config).value();
    pods_client_ = KubeClient::Create(config).value();
    for (ReflectorOptions* r : {&options.nodes, &options.pods}) {
      r->page_size = 5;  // the demo's 24 pods come in 5 pages
      r->initial_backoff = milliseconds(5);
      r->max_backoff = milliseconds(20);
    }
    options.publish_interval = milliseconds(1);
    for (int i = 0; dra && i < 4; ++i) dra_clients_.push_back(KubeClient::Create(config).value());
    if (dra) {
      dra_.emplace(DraApis{*dra_clients_[0], *dra_clients_[1], *dra_clients_[2], *dra_clients_[3]});
    }
    inventory_ = std::make_unique<KubeInventory>(
        *nodes_client_, *pods_client_, clock_, log_, options,
        [this](std::shared_ptr<const InventorySnapshot> s) {
          std::lock_guard<std::mutex> lock(mu_);
          latest_ = std::move(s);
          published_.notify_all();
        },
        &ledger_, dra_ ? &*dra_ : nullptr);
    inventory_->Start();
  }

  void TearDown() override {
    if (inventory_) inventory_->Stop();
  }

  // Waits (at most 10 s) for a published snapshot that satisfies `ok`.
  std::shared_ptr<const InventorySnapshot> WaitFor(
      const std::function<bool(const InventorySnapshot&)>& ok) {
    std::unique_lock<std::mutex> lock(mu_);
    published_.wait_for(lock, seconds(10), [&] { return latest_ && ok(*latest_); });
    EXPECT_TRUE(latest_ && ok(*latest_)) << "no published snapshot satisfied the condition";
    return latest_;
  }

  static int64_t Free(const InventorySnapshot& s, const char* node, const char* resource) {
    const NodeInventory* n = s.FindNode(node);
    return n == nullptr ? -1 : n->Free(resource);
  }

  testing::FakeKubeApiServer api_{"secret"};
  testing::FakeClock clock_;
  Logger log_{LogLevel::kError};
  SharedLedger ledger_{clock_, seconds(30)};
  std::unique_ptr<KubeClient> nodes_client_;
  std::unique_ptr<KubeClient> pods_client_;
  std::vector<std::unique_ptr<KubeClient>> dra_clients_;
  std::optional<DraApis> dra_;
  std::unique_ptr<KubeInventory> inventory_;
  std::mutex mu_;
  std::condition_variable published_;
  std::shared_ptr<const InventorySnapshot> latest_;
};

TEST_F(KubeInventoryTest, InitialSyncInPagesGivesTheDemoClustersFreeCounts) {
  Start();
  auto s = WaitFor([](const InventorySnapshot& x) { return x.nodes().size() == 3; });
  EXPECT_EQ(Free(*s, "gpu-small", k1g), 22);
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 7);
  EXPECT_EQ(Free(*s, "gpu-medium", k1g), 3);
  EXPECT_EQ(Get(s->queued(), k2g), 1);
  EXPECT_EQ(Get(s->unplaceable(), k2g), 1);  // qwen-eval: the scheduler marked it Unschedulable
  EXPECT_TRUE(inventory_->Synced());
  int pages = 0;
  for (const auto& r : api_.requests()) {
    if (r.target.rfind("/api/v1/pods?limit=5", 0) == 0) {
      ++pages;
      EXPECT_NE(r.target.find("fieldSelector=status.phase%21%3DSucceeded"), std::string::npos);
      EXPECT_EQ(r.authorization, "Bearer secret");
    }
  }
  EXPECT_GE(pages, 5);
}

TEST_F(KubeInventoryTest, DraSlicesAndClaimsAreListedAndWatchedIntoTheNodesCounts) {
  json seed = testing::ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  api_.SetObjects("nodes", ItemsOfKind(seed, "Node"), "100");
  api_.SetObjects("pods", {}, "100");
  api_.SetObjects("resourceslices", ItemsOfKind(seed, "ResourceSlice"), "100");
  api_.SetObjects("deviceclasses", ItemsOfKind(seed, "DeviceClass"), "100");
  Start({}, /*dra=*/true);
  auto s = WaitFor([](const InventorySnapshot& x) { return Free(x, "h200-medium", k2g) == 12; });
  EXPECT_EQ(s->device_classes().size(), 2u);
  // A claim allocated in the watch takes its device.
  json claim = ItemsOfKind(seed, "ResourceClaim").at(0);
  claim["metadata"]["resourceVersion"] = "101";
  api_.PushWatchEvent("resourceclaims", {{"type", "ADDED"}, {"object", claim}});
  WaitFor([](const InventorySnapshot& x) { return Free(x, "h200-medium", k2g) == 11; });
}

TEST_F(KubeInventoryTest, AForbiddenDraKindCountsAsNoneAndTheInventoryStillSyncs) {
  // Refused far longer than the wait below: the sync cannot come from a later list that passes.
  for (int i = 0; i < 2000; ++i) {
    api_.InjectFault("resourceslices", testing::FakeKubeApiServer::RequestKind::kList,
                     testing::FakeKubeApiServer::Fault::Status(403));
  }
  Start({}, /*dra=*/true);
  auto s = WaitFor([](const InventorySnapshot& x) { return x.nodes().size() == 3; });
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 7);
  EXPECT_TRUE(inventory_->Synced());
  EXPECT_FALSE(inventory_->Stale());
}

TEST_F(KubeInventoryTest, ExporterPodNamesAreJoinedToTheNodesTheWatchPutsThemOn) {
  json exporter = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "nvidia-dcgm-exporter-s228n"}, {"namespace", "gpu-operator"}}},
      {"spec", {{"nodeName", "gpu-small"}, {"containers", json::array()}}},
      {"status", {{"phase", "Running"}}}};
  api_.PushWatchEvent("pods", {{"type", "ADDED"}, {"object", exporter}});
  Start();
  std::set<std::string, std::less<>> hosts = {"nvidia-dcgm-exporter-s228n", "gpu-medium"};
  std::map<std::string, std::string, std::less<>> joined;
  // The event arrives after the first sync: wait for it.
  EXPECT_TRUE(testing::WaitUntil([&] {
    joined = inventory_->NodesOfPodsNamed(hosts);
    return !joined.empty();
  }));
  EXPECT_EQ(joined, (std::map<std::string, std::string, std::less<>>{
                        {"nvidia-dcgm-exporter-s228n", "gpu-small"}}));
}

TEST_F(KubeInventoryTest, WatchEventsMoveFreeCountsAndTerminalPodsFreeTheirDevices) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  api_.PushWatchEvent(
      "pods", {{"type", "ADDED"}, {"object", GpuPod("p1", "gpu-medium", "Running", k2g, "101")}});
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-medium", k2g) == 6; });
  api_.PushWatchEvent("pods", {{"type", "MODIFIED"},
                               {"object", GpuPod("p1", "gpu-medium", "Succeeded", k2g, "102")}});
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-medium", k2g) == 7; });
  api_.PushWatchEvent(
      "pods", {{"type", "ADDED"}, {"object", GpuPod("p2", "gpu-small", "Running", k1g, "103")}});
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-small", k1g) == 21; });
  api_.PushWatchEvent(
      "pods", {{"type", "DELETED"}, {"object", GpuPod("p2", "gpu-small", "Running", k1g, "104")}});
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-small", k1g) == 22; });
}

// A device's life through the watch (docs/decisions.md): created -> queued (counted on the node
// it may use) -> bound (used) -> terminated (free); deleted while queued frees it too; queued but
// marked Unschedulable by the scheduler holds nothing.
TEST_F(KubeInventoryTest, AWatchedPodIsQueuedThenUsedThenFreeThroughItsLife) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  auto queued_on_medium = [](const InventorySnapshot& s) {
    return Get(s.FindNode("gpu-medium")->queued, "nvidia.com/mig-2g.20gb");
  };
  api_.PushWatchEvent("pods",
                      {{"type", "ADDED"}, {"object", GpuPod("p1", "", "Pending", k2g, "101")}});
  auto s = WaitFor([&](const InventorySnapshot& x) { return queued_on_medium(x) == 1; });
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 6);
  api_.PushWatchEvent("pods", {{"type", "MODIFIED"},
                               {"object", GpuPod("p1", "gpu-medium", "Running", k2g, "102")}});
  s = WaitFor([&](const InventorySnapshot& x) { return queued_on_medium(x) == 0; });
  EXPECT_EQ(Get(s->FindNode("gpu-medium")->used, k2g), 6);
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 6);
  api_.PushWatchEvent("pods", {{"type", "MODIFIED"},
                               {"object", GpuPod("p1", "gpu-medium", "Succeeded", k2g, "103")}});
  WaitFor([](const InventorySnapshot& x) { return Free(x, "gpu-medium", k2g) == 7; });
  api_.PushWatchEvent("pods",
                      {{"type", "ADDED"}, {"object", GpuPod("p2", "", "Pending", k2g, "104")}});
  WaitFor([](const InventorySnapshot& x) { return Free(x, "gpu-medium", k2g) == 6; });
  api_.PushWatchEvent("pods",
                      {{"type", "DELETED"}, {"object", GpuPod("p2", "", "Pending", k2g, "105")}});
  WaitFor([](const InventorySnapshot& x) { return Free(x, "gpu-medium", k2g) == 7; });
  json stuck = GpuPod("p3", "", "Pending", k2g, "106");
  stuck["status"]["conditions"] = {
      {{"type", "PodScheduled"},
       {"status", "False"},
       {"reason", "Unschedulable"},
       {"message", "0/3 nodes are available: 3 Insufficient memory."}}};
  api_.PushWatchEvent("pods", {{"type", "ADDED"}, {"object", stuck}});
  s = WaitFor([](const InventorySnapshot& x) { return Get(x.queued(), k2g) == 2; });
  EXPECT_EQ(Get(s->unplaceable(), k2g), 2);  // qwen-eval and p3
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 7);
}

TEST_F(KubeInventoryTest, TheRecordedWatchStreamAddsModifiesAndDeletesItsPod) {
  Start();
  auto before = WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  size_t pods = before->pod_count();
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  std::string stream =
      testing::ReadSourceFile("tests/fixtures/watch/watch-pods-added-modified-deleted-2015.jsonl");
  std::string first_line = stream.substr(0, stream.find('\n') + 1);
  api_.PushWatchText("pods", first_line);
  WaitFor([&](const InventorySnapshot& s) { return s.pod_count() == pods + 1; });
  api_.PushWatchText("pods", stream.substr(first_line.size()));
  WaitFor([&](const InventorySnapshot& s) { return s.pod_count() == pods; });
}

TEST_F(KubeInventoryTest, RealRecordedNodeObjectsGiveTheirMigCapacity) {
  std::vector<json> nodes;
  for (const char* file : {"a100-sxm4-40gb-mig-7g.40gb-kubectl-edit.yaml",
                           "a100-sxm4-40gb-mig-mixed-3x1g.5gb-1x2g.10gb-kubectl-edit.yaml",
                           "tesla-t4-x2-gpu-2-kubectl-edit.yaml"}) {
    auto node = YamlToJson(testing::ReadSourceFile(std::string("tests/fixtures/nodes/") + file));
    ASSERT_TRUE(node.ok()) << file;
    nodes.push_back(node.value());
  }
  // Two of the recordings are the same host reconfigured: the later object wins, as in a watch.
  api_.SetObjects("nodes", nodes, "200");
  api_.SetObjects("pods",
                  {GpuPod("t4-user", "qa-mig-worker-gpu-1", "Running", "nvidia.com/gpu", "201")},
                  "200");
  Start();
  auto s = WaitFor([](const InventorySnapshot& x) { return x.nodes().size() == 2; });
  EXPECT_EQ(Free(*s, "qa-mig-worker-gpu-a100", "nvidia.com/mig-1g.5gb"), 3);
  EXPECT_EQ(Free(*s, "qa-mig-worker-gpu-a100", "nvidia.com/mig-2g.10gb"), 1);
  EXPECT_EQ(Free(*s, "qa-mig-worker-gpu-a100", "nvidia.com/mig-3g.20gb"), 0);  // allocatable 0
  EXPECT_EQ(Free(*s, "qa-mig-worker-gpu-1", "nvidia.com/gpu"), 1);             // 2 T4s, 1 used
  EXPECT_EQ(s->FindNode("qa-mig-worker-gpu-1")->Product(), "Tesla-T4");
}

TEST_F(KubeInventoryTest, ABookmarkMovesTheResourceVersionTheNextWatchResumesFrom) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  api_.PushWatchEvent("pods",
                      {{"type", "BOOKMARK"},
                       {"object", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "777"}}}}}});
  api_.EndWatch("pods");
  ASSERT_TRUE(api_.WaitForWatches("pods", 2, seconds(10)));
  std::string last_watch;
  for (const auto& r : api_.requests()) {
    if (r.target.find("/api/v1/pods?watch=1") == 0) last_watch = r.target;
  }
  EXPECT_NE(last_watch.find("resourceVersion=777"), std::string::npos) << last_watch;
  EXPECT_NE(last_watch.find("allowWatchBookmarks=true"), std::string::npos);
}

TEST_F(KubeInventoryTest, AGoneEventMidWatchRelistsAndTheNewListWins) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  // The cluster moved on while we could not follow: 3 more 2g.20gb pods on gpu-medium.
  json demo = testing::DemoCluster();
  testing::AddBoundPods(demo, "gpu-medium", k2g, 3);
  api_.SetObjects("pods", ItemsOfKind(demo, "Pod"), "500");
  api_.PushWatchEvent("pods", testing::FakeKubeApiServer::GoneEvent());
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-medium", k2g) == 4; });
}

TEST_F(KubeInventoryTest, A410StatusOnTheWatchRelists) {
  api_.InjectFault("pods", testing::FakeKubeApiServer::RequestKind::kWatch,
                   testing::FakeKubeApiServer::Fault::Status(410));
  Start();
  auto s = WaitFor([](const InventorySnapshot& x) { return x.nodes().size() == 3; });
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 7);
  EXPECT_EQ(Free(*s, "gpu-small", k1g), 22);
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));  // the one after the relist
  int lists = 0;
  for (const auto& r : api_.requests()) {
    if (r.target.rfind("/api/v1/pods?limit=5", 0) == 0 &&
        r.target.find("continue=") == std::string::npos)
      ++lists;
  }
  EXPECT_EQ(lists, 2);
}

TEST_F(KubeInventoryTest, ADroppedConnectionResumesTheWatchAndLosesNoEvents) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  api_.PushWatchEvent(
      "pods", {{"type", "ADDED"}, {"object", GpuPod("p1", "gpu-medium", "Running", k2g, "101")}});
  api_.DropWatch("pods");
  ASSERT_TRUE(api_.WaitForWatches("pods", 2, seconds(10)));
  api_.PushWatchEvent(
      "pods", {{"type", "ADDED"}, {"object", GpuPod("p2", "gpu-medium", "Running", k2g, "102")}});
  WaitFor([](const InventorySnapshot& s) { return Free(s, "gpu-medium", k2g) == 5; });
  std::string last_watch;
  for (const auto& r : api_.requests()) {
    if (r.target.find("/api/v1/pods?watch=1") == 0) last_watch = r.target;
  }
  EXPECT_NE(last_watch.find("resourceVersion=101"), std::string::npos) << last_watch;
}

TEST_F(KubeInventoryTest, ASlowServerStillSyncs) {
  api_.InjectFault("nodes", testing::FakeKubeApiServer::RequestKind::kList,
                   testing::FakeKubeApiServer::Fault::Delay(milliseconds(300)));
  api_.InjectFault("pods", testing::FakeKubeApiServer::RequestKind::kListContinue,
                   testing::FakeKubeApiServer::Fault::Delay(milliseconds(300)));
  Start();
  auto s = WaitFor([](const InventorySnapshot& x) { return x.nodes().size() == 3; });
  EXPECT_EQ(Free(*s, "gpu-medium", k2g), 7);
}

TEST_F(KubeInventoryTest, AWatchDownPastTheLimitMakesTheInventoryStale) {
  KubeInventoryOptions options;
  options.staleness_limit = seconds(60);
  Start(options);
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  EXPECT_FALSE(inventory_->Stale());
  api_.Stop();  // the API server goes away: watches break, lists fail
  clock_.Advance(seconds(61));
  // The reflectors notice the broken watch on their own thread, and the watch's downtime counts
  // on the fake clock from then: each poll moves the clock past the limit again.
  EXPECT_TRUE(testing::WaitUntil([&] {
    clock_.Advance(seconds(61));
    return inventory_->Stale();
  }));
}

TEST_F(KubeInventoryTest, AReservationEndsWhenItsPodArrives) {
  Start();
  WaitFor([](const InventorySnapshot& s) { return s.nodes().size() == 3; });
  ASSERT_TRUE(ledger_.Commit("key-1", "default/p1", {{"gpu-medium", k2g, 1, 7}}));
  ASSERT_EQ(ledger_.size(), 1u);
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, seconds(10)));
  json pod = GpuPod("p1", "", "Pending", k2g, "101");
  pod["metadata"]["annotations"] = {{"gpuadmit.io/reservation", "key-1"}};
  api_.PushWatchEvent("pods", {{"type", "ADDED"}, {"object", pod}});
  WaitFor(
      [](const InventorySnapshot& s) { return Get(s.queued(), "nvidia.com/mig-2g.20gb") == 2; });
  // Released right after the snapshot that counts the pod was handed over.
  EXPECT_TRUE(testing::WaitUntil([&] { return ledger_.size() == 0; }));
}

}  // namespace
}  // namespace gpuadmit
