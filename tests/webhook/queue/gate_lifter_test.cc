// The gate lifter against the fake API server: the queue rebuilt from a snapshot, pods PATCHed
// to lift their gate (pinned where the queue counted them), Events for timeouts, 409s, a
// follower that lifts nothing, and a leader change mid-queue.
#include "webhook/queue/gate_lifter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/json/json_fields.h"
#include "tests/fakes/fake_kube_api_server.h"
#include "webhook/queue/gate_patch.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::FakeKubeApiServer;

constexpr const char* kToken = "queue-token";
constexpr const char* kGate = "gpuadmit.io/capacity";
constexpr int64_t kCreatedMs = 1795680000000;  // 2026-11-26T08:00:00Z

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json Node(const std::string& name, int gpus) {
  return {{"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name + "-host"}}}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

// A pod of `gpus` GPUs created `second` seconds after kCreatedMs, gated unless bound to `node`.
json Pod(const std::string& name, int gpus, int second, const std::string& node = "") {
  json spec = {
      {"containers",
       {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}};
  if (node.empty()) {
    spec["schedulingGates"] = {{{"name", kGate}}};
  } else {
    spec["nodeName"] = node;
  }
  return {{"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", "uid-" + name},
            {"resourceVersion", "7"},
            {"creationTimestamp", "2026-11-26T08:00:0" + std::to_string(second) + "Z"}}},
          {"spec", spec},
          {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
}

class GateLifterTest : public ::testing::Test {
 protected:
  GateLifterTest() : api_(kToken), handler_(log_, metrics_) {
    KubeConfig config;
    config.server = api_.url();
    config.certificate_authority = {ReadFile(api_.ca_file()), api_.ca_file()};
    config.token = kToken;
    client_ = KubeClient::Create(config).value();
    other_client_ = KubeClient::Create(config).value();
    Policy policy;
    policy.queue.enabled = true;
    policy.queue.timeout_seconds = 300;
    handler_.SetPolicy(std::make_shared<const Policy>(policy));
  }

  // The cluster: the fake API serves `pods` and the handler's snapshot holds them and the nodes.
  void SetCluster(const std::vector<json>& nodes, const std::vector<json>& pods) {
    nodes_ = nodes;
    api_.SetObjects("pods", pods, "10");
    Publish(pods);
  }
  // The snapshot as the watch would show `pods` (the API's state, or an older one).
  void Publish(const std::vector<json>& pods) {
    json items = json::array();
    for (const json& n : nodes_) items.push_back(n);
    for (const json& p : pods) items.push_back(p);
    auto snapshot = InventorySnapshot::FromObjects({{"items", items}});
    ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
    handler_.SetSnapshot(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
  }
  // The pods as the API holds them now.
  std::vector<json> ApiPods(const std::vector<std::string>& names) {
    std::vector<json> pods;
    for (const std::string& name : names) {
      auto pod = api_.Pod("ml", name);
      if (pod) pods.push_back(*pod);
    }
    return pods;
  }
  GateLifter Lifter(KubeClient& client, std::function<bool()> leading = nullptr) {
    return GateLifter(client, handler_, log_, metrics_,
                      {.instance = "gpuadmit-test",
                       .leading = std::move(leading),
                       .now_unix_ms = [this] { return now_ms_; }});
  }
  size_t Patches() const {
    size_t n = 0;
    for (const auto& r : api_.requests()) n += r.method == "PATCH";
    return n;
  }

  FakeKubeApiServer api_;
  Logger log_{LogLevel::kError};
  Metrics metrics_;
  AdmissionHandler handler_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<KubeClient> other_client_;
  std::vector<json> nodes_;
  int64_t now_ms_ = kCreatedMs + 60'000;
};

std::vector<std::string> Keys(const GateLifter::Pass& pass) {
  std::vector<std::string> keys;
  for (const LiftedPod& l : pass.lifted) keys.push_back(l.key);
  return keys;
}

std::string Pin(const json& pod) {
  const json& terms =
      At(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
               "nodeSelectorTerms"});
  if (!terms.is_array() || terms.size() != 1) return "";
  return terms[0]["matchFields"].back()["values"][0].get<std::string>();
}

TEST_F(GateLifterTest, NothingFreeNothingLiftedAndTheHeadHoldsTheRoomSmallPodsWant) {
  // gpu-a full; gpu-b has 4 free. The head (8 GPUs) holds gpu-b, where it is closest to
  // fitting, so the 2-GPU pod behind it does not backfill there.
  SetCluster({Node("gpu-a", 8), Node("gpu-b", 8)},
             {Pod("full-a", 8, 0, "gpu-a"), Pod("half-b", 4, 0, "gpu-b"), Pod("big", 8, 1),
              Pod("small", 2, 2)});
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  EXPECT_TRUE(pass.lifted.empty());
  EXPECT_EQ(pass.waiting, 2u);
  EXPECT_EQ(Patches(), 0u);
  EXPECT_NE(metrics_.Render().find("gpuadmit_queue_pods 2"), std::string::npos);
}

TEST_F(GateLifterTest, FreedCapacityLiftsInArrivalOrderPinnedWhereTheQueueCountedIt) {
  SetCluster({Node("gpu-a", 8), Node("gpu-b", 8)}, {Pod("half-b", 4, 0, "gpu-b"), Pod("big", 8, 1),
                                                    Pod("small", 2, 2), Pod("medium", 4, 3)});
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  // big fits only on gpu-a; small then best-fits gpu-b (4 free, 2 left); medium waits.
  EXPECT_EQ(Keys(pass), (std::vector<std::string>{"ml/big", "ml/small"}));
  EXPECT_EQ(pass.waiting, 1u);
  json big = api_.Pod("ml", "big").value();
  EXPECT_FALSE(HasGate(big, kGate));
  EXPECT_EQ(Pin(big), "gpu-a");  // by the node's name, not its hostname label
  EXPECT_EQ(StringAt(big, {"metadata", "annotations", "gpuadmit.io/queue"}),
            "lifted: capacity on gpu-a after 59s");
  EXPECT_EQ(Pin(api_.Pod("ml", "small").value()), "gpu-b");
  EXPECT_TRUE(HasGate(api_.Pod("ml", "medium").value(), kGate));
  std::string text = metrics_.Render();
  EXPECT_NE(text.find(R"(gpuadmit_queue_lifts_total{reason="capacity"} 2)"), std::string::npos);
  EXPECT_NE(text.find("gpuadmit_queue_wait_seconds_count 2"), std::string::npos);
  EXPECT_TRUE(api_.Events().empty());

  // The watch has not shown the lifts yet: the next pass neither lifts them again nor counts
  // on the room they were given.
  GateLifter::Pass again = lifter.RunOnce();
  EXPECT_TRUE(again.lifted.empty());
  EXPECT_EQ(Patches(), 2u);
}

TEST_F(GateLifterTest, TheTimeoutLiftsWithoutAPinAndPostsAnEvent) {
  SetCluster({Node("gpu-a", 8)}, {Pod("full-a", 8, 0, "gpu-a"), Pod("big", 8, 1)});
  now_ms_ = kCreatedMs + 302'000;  // 301 s after big arrived
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  ASSERT_EQ(pass.lifted.size(), 1u);
  EXPECT_EQ(pass.lifted[0].reason, LiftReason::kTimeout);
  json big = api_.Pod("ml", "big").value();
  EXPECT_FALSE(HasGate(big, kGate));
  EXPECT_EQ(Pin(big), "");
  EXPECT_EQ(StringAt(big, {"metadata", "annotations", "gpuadmit.io/queue"}),
            "lifted: waited 301s, the timeout (300s); capacity never came");
  std::vector<json> events = api_.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "CapacityWaitTimedOut");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "big");
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_NE(metrics_.Render().find(R"(gpuadmit_queue_lifts_total{reason="timeout"} 1)"),
            std::string::npos);
}

TEST_F(GateLifterTest, APodNoNodeCanEverHoldIsLiftedAtOnceWithAnEvent) {
  SetCluster({Node("gpu-a", 8)}, {Pod("huge", 16, 1)});
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  ASSERT_EQ(pass.lifted.size(), 1u);
  EXPECT_EQ(pass.lifted[0].reason, LiftReason::kUnplaceable);
  ASSERT_EQ(api_.Events().size(), 1u);
  EXPECT_EQ(api_.Events()[0]["reason"], "CapacityUnplaceable");
}

TEST_F(GateLifterTest, AConflictIsReadAgainNextPass) {
  SetCluster({Node("gpu-a", 8)}, {Pod("big", 8, 1)});
  // The GET is answered; the PATCH meets 409 as if the pod had changed in between.
  api_.InjectFault("pods", FakeKubeApiServer::RequestKind::kPod,
                   FakeKubeApiServer::Fault::Delay(std::chrono::milliseconds(0)));
  api_.InjectFault("pods", FakeKubeApiServer::RequestKind::kPod,
                   FakeKubeApiServer::Fault::Status(409));
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  EXPECT_TRUE(pass.lifted.empty());
  EXPECT_EQ(pass.conflicts, 1u);
  EXPECT_TRUE(HasGate(api_.Pod("ml", "big").value(), kGate));
  EXPECT_NE(metrics_.Render().find("gpuadmit_queue_lift_conflicts_total 1"), std::string::npos);
  GateLifter::Pass next = lifter.RunOnce();
  EXPECT_EQ(Keys(next), std::vector<std::string>{"ml/big"});
  EXPECT_FALSE(HasGate(api_.Pod("ml", "big").value(), kGate));
}

TEST_F(GateLifterTest, AStaleResourceVersionIsAConflictAtTheApiServer) {
  SetCluster({Node("gpu-a", 8)}, {Pod("big", 8, 1)});
  json pod = api_.Pod("ml", "big").value();
  json stale = LiftPatch(pod, kGate, {"gpuadmit.io/queue", "x"}, "");
  stale["metadata"]["resourceVersion"] = "1";
  auto answer =
      client_->Send("PATCH", PodPath("ml", "big"), stale.dump(), "application/merge-patch+json");
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer.value().status, 409);
}

TEST_F(GateLifterTest, AFollowerLiftsNothing) {
  SetCluster({Node("gpu-a", 8)}, {Pod("big", 8, 1)});
  GateLifter follower = Lifter(*client_, [] { return false; });
  GateLifter::Pass pass = follower.RunOnce();
  EXPECT_TRUE(pass.lifted.empty());
  EXPECT_EQ(pass.waiting, 1u);  // it still reports what waits
  EXPECT_TRUE(api_.requests().empty());
}

TEST_F(GateLifterTest, ANewLeaderCarriesOnFromTheApiAlone) {
  SetCluster({Node("gpu-a", 8), Node("gpu-b", 8)},
             {Pod("full-b", 8, 0, "gpu-b"), Pod("big", 8, 1), Pod("next", 8, 2)});
  bool a_leads = true;
  GateLifter a = Lifter(*client_, [&] { return a_leads; });
  GateLifter b = Lifter(*other_client_, [&] { return !a_leads; });
  EXPECT_EQ(Keys(a.RunOnce()), std::vector<std::string>{"ml/big"});

  // The leader changes before the watch shows the lift: b's snapshot still has big gated. b
  // reads big, finds it released, and leaves it; next has no room (big's is gone).
  a_leads = false;
  GateLifter::Pass stale = b.RunOnce();
  EXPECT_TRUE(stale.lifted.empty());
  EXPECT_EQ(Patches(), 1u);

  // The watch catches up: big is unbound, pinned to gpu-a, and counted there; next still waits.
  Publish(ApiPods({"full-b", "big", "next"}));
  GateLifter::Pass caught_up = b.RunOnce();
  EXPECT_TRUE(caught_up.lifted.empty());
  EXPECT_EQ(caught_up.waiting, 1u);

  // full-b ends: b lifts next onto gpu-b.
  api_.SetObjects("pods", ApiPods({"big", "next"}), "20");
  Publish(ApiPods({"big", "next"}));
  GateLifter::Pass freed = b.RunOnce();
  EXPECT_EQ(Keys(freed), std::vector<std::string>{"ml/next"});
  EXPECT_EQ(Pin(api_.Pod("ml", "next").value()), "gpu-b");
  EXPECT_EQ(Patches(), 2u);
}

TEST_F(GateLifterTest, PodsThePolicyNoLongerQueuesAreReleased) {
  SetCluster({Node("gpu-a", 8)}, {Pod("full-a", 8, 0, "gpu-a"), Pod("big", 8, 1)});
  Policy off;  // queue.enabled false
  handler_.SetPolicy(std::make_shared<const Policy>(off));
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  ASSERT_EQ(pass.lifted.size(), 1u);
  EXPECT_EQ(pass.lifted[0].reason, LiftReason::kDisabled);
  json big = api_.Pod("ml", "big").value();
  EXPECT_FALSE(HasGate(big, kGate));
  EXPECT_EQ(Pin(big), "");
}

TEST_F(GateLifterTest, AnApiErrorIsCountedAndRetried) {
  SetCluster({Node("gpu-a", 8)}, {Pod("big", 8, 1)});
  api_.InjectFault("pods", FakeKubeApiServer::RequestKind::kPod,
                   FakeKubeApiServer::Fault::Status(500));
  GateLifter lifter = Lifter(*client_);
  GateLifter::Pass pass = lifter.RunOnce();
  EXPECT_EQ(pass.failures, 1u);
  EXPECT_NE(metrics_.Render().find("gpuadmit_queue_lift_failures_total 1"), std::string::npos);
  EXPECT_EQ(Keys(lifter.RunOnce()), std::vector<std::string>{"ml/big"});
}

}  // namespace
}  // namespace gpuadmit
