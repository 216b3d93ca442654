// Seed 003's burst, replayed: a Deployment of 20 replicas asking 2g.20gb created within 100 ms on
// seed 003's cluster (12 of them, and 32 of 1g.10gb), the scheduler binding 50 ms after each
// admission. With gpuadmit all 20 run, 12 on 2g.20gb and 8 fallen back to 1g.10gb; without it 12
// run and 8 stay Pending.
#include "core/sim/replay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

// Seed 003's cluster as it starts: the demo's nodes, no pods.
json Seed003Cluster() {
  json demo = testing::DemoCluster();
  json nodes = json::array();
  for (const json& item : demo["items"]) {
    if (item["kind"] == "Node") nodes.push_back(item);
  }
  return testing::ListOf(nodes);
}

Arrival Replica(int i, double at, std::optional<double> duration = std::nullopt) {
  json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"namespace": "ml", "creationTimestamp": "2026-11-25T10:00:00Z",
                 "labels": {"app": "llm"}},
    "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.6.4",
      "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                    "limits": {"nvidia.com/mig-2g.20gb": "1"}}}]}})");
  pod["metadata"]["name"] = "llm-" + std::to_string(i);
  return {at, duration, pod};
}

std::vector<Arrival> Burst(int replicas) {
  std::vector<Arrival> out;
  for (int i = 0; i < replicas; ++i) out.push_back(Replica(i, i * 0.005));  // 100 ms for 20
  return out;
}

Policy ExamplePolicy() {
  auto parsed = ParsePolicy(testing::ReadSourceFile("manifests/examples/policy.yaml"));
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? parsed.value() : Policy{};
}

TEST(Replay, Seed003BurstRunsEveryReplicaWithGpuadmitAndTwelveWithout) {
  json cluster = Seed003Cluster();
  std::vector<Arrival> arrivals = Burst(20);
  Policy policy = ExamplePolicy();
  ReplayOptions options;  // 10 ms to the watch, 50 ms to the scheduler

  auto with = Replay(cluster, arrivals, &policy, options);
  ASSERT_TRUE(with.ok()) << with.error().message;
  EXPECT_EQ(with.value().arrived, 20);
  EXPECT_EQ(with.value().placed, 20);
  EXPECT_EQ(with.value().pending, 0);
  EXPECT_EQ(with.value().fallbacks, 8);
  EXPECT_EQ(with.value().placed_by_resource, (std::map<std::string, int>{{k1g, 8}, {k2g, 12}}));

  auto without = Replay(cluster, arrivals, nullptr, options);
  ASSERT_TRUE(without.ok()) << without.error().message;
  EXPECT_EQ(without.value().placed, 12);
  EXPECT_EQ(without.value().pending, 8);
  EXPECT_EQ(without.value().fallbacks, 0);
  EXPECT_EQ(without.value().placed_by_resource, (std::map<std::string, int>{{k2g, 12}}));
}

TEST(Replay, ACustomAnnotationPrefixReleasesItsReservationsAsThePodsArrive) {
  // The ledger writes <prefix>/reservation; the watch must read the same key, or each pod's
  // devices count twice (bound and reserved) until the TTL and pods fall back needlessly.
  Policy policy = ExamplePolicy();
  policy.annotation_prefix = "gpu-webhook.k8s.io";
  auto r = Replay(Seed003Cluster(), Burst(20), &policy, ReplayOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().placed, 20);
  EXPECT_EQ(r.value().fallbacks, 8);
  EXPECT_EQ(r.value().placed_by_resource, (std::map<std::string, int>{{k1g, 8}, {k2g, 12}}));
}

TEST(Replay, AdmissionsFasterThanTheWatchStillCountOnTheLedger) {
  // Every replica is reviewed before the first reaches the watch: only the ledger stands
  // between them and the same twelve devices.
  ReplayOptions slow_watch{.watch_delay = 1.0, .bind_delay = 2.0};
  Policy policy = ExamplePolicy();
  auto r = Replay(Seed003Cluster(), Burst(20), &policy, slow_watch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().placed, 20);
  EXPECT_EQ(r.value().fallbacks, 8);
}

TEST(Replay, APendingPodRunsWhenAnotherLeavesAndWaitsAreMeasured) {
  // Baseline: 13 replicas, the first 12 leave after 10 s; the 13th is bound when one leaves.
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 12; ++i) arrivals.push_back(Replica(i, 0, 10.0));
  arrivals.push_back(Replica(12, 1.0));
  auto r = Replay(Seed003Cluster(), arrivals, nullptr, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().placed, 13);
  EXPECT_EQ(r.value().pending, 0);
  ASSERT_EQ(r.value().waits.size(), 13u);
  // Bound 50 ms after arriving; the 13th when the first one leaves, at 10.05 s.
  EXPECT_NEAR(r.value().waits.front(), 0.05, 1e-9);
  EXPECT_NEAR(r.value().waits.back(), 10.05 - 1.0, 1e-9);
}

TEST(Replay, RefusesAClusterThatIsNoListAndAPodWithoutAName) {
  EXPECT_FALSE(Replay(json::object(), {}, nullptr, {}).ok());
  std::vector<Arrival> nameless = {Arrival{0, std::nullopt, {{"spec", json::object()}}}};
  auto r = Replay(Seed003Cluster(), nameless, nullptr, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "arrival 0: the pod has no metadata.name");
}

TEST(Replay, RequiredPinsInACpuBoundBurstPlaceAsManyAsTheScheduler) {
  // Four 8-GPU nodes with 32 cpus, and 20 pods of one GPU and 12 cpus within 100 ms: cpu runs
  // two pods a node. The large-cluster policy pins each pod to its node, so reviews that come
  // before the watch shows the earlier pods must not pin three to one node: the pin reserves
  // the pod's cpu, and a pinned pod's cpu counts on its node until it is bound.
  json nodes = json::array();
  for (int i = 0; i < 4; ++i) {
    json node = testing::GpuNode("gpu-" + std::to_string(i), 8, "NVIDIA-H100-80GB-HBM3");
    node["status"]["allocatable"]["cpu"] = "32";
    nodes.push_back(node);
  }
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 20; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "p-" + std::to_string(i)}, {"namespace", "default"}}},
                {"spec",
                 {{"containers",
                   {{{"name", "main"},
                     {"image", "cuda"},
                     {"resources",
                      {{"requests", {{"cpu", "12"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
    arrivals.push_back({i * 0.005, std::nullopt, pod});
  }
  auto policy = ParsePolicy(testing::ReadSourceFile("manifests/examples/policy-large-cluster.yaml"));
  ASSERT_TRUE(policy.ok());
  auto with = Replay(testing::ListOf(nodes), arrivals, &policy.value(), {});
  auto without = Replay(testing::ListOf(nodes), arrivals, nullptr, {});
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(without.value().placed, 8);
  EXPECT_EQ(with.value().placed, 8);
}

}  // namespace
}  // namespace gpuadmit
