#include "webhook/queue/live_queue.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuadmit {
namespace {

using nlohmann::json;

json Node(const std::string& name, int gpus, bool ready = true, bool cpu = true) {
  json allocatable = {{"nvidia.com/gpu", std::to_string(gpus)}};
  if (cpu) {
    allocatable["cpu"] = "64";
    allocatable["memory"] = "256Gi";
  }
  return {{"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status",
           {{"allocatable", allocatable},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

json Pod(const std::string& name, int gpus, json spec_extra = json::object(),
         const std::string& node = "") {
  json container = {{"name", "c"}};
  container["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  container["resources"]["requests"] = {{"cpu", "4"}, {"memory", "16Gi"}};
  json spec = {{"containers", json::array({container})}};
  spec.update(spec_extra);
  if (!node.empty()) spec["nodeName"] = node;
  return {{"kind", "Pod"},
          {"metadata",
           {{"name", name}, {"namespace", "ml"}, {"creationTimestamp", "2026-11-26T08:00:00Z"}}},
          {"spec", spec},
          {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
}

InventorySnapshot Snapshot(json items) {
  auto s = InventorySnapshot::FromObjects({{"items", std::move(items)}});
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

const json kGated = {{"schedulingGates", {{{"name", "gpuadmit.io/capacity"}}}}};

TEST(ParseKubeTime, ReadsWhatTheApiServerWrites) {
  EXPECT_EQ(ParseKubeTime("2026-11-26T08:00:00Z"), 1795680000.0);
  EXPECT_NEAR(ParseKubeTime("2026-11-26T08:00:00.25Z").value(), 1795680000.25, 1e-6);
  EXPECT_FALSE(ParseKubeTime("").has_value());
  EXPECT_FALSE(ParseKubeTime("2026-11-26 08:00:00Z").has_value());
  EXPECT_FALSE(ParseKubeTime("2026-11-26T08:00:00+01:00").has_value());
  EXPECT_FALSE(ParseKubeTime("2026-13-26T08:00:00Z").has_value());
}

TEST(RoomsOf, FreeIsNetOfBoundPodsAndANotReadyNodeHasNone) {
  InventorySnapshot s =
      Snapshot({Node("gpu-a", 8), Node("gpu-b", 8, /*ready=*/false),
                Node("gpu-c", 4, true, /*cpu=*/false), Pod("bound", 3, json::object(), "gpu-a")});
  std::vector<NodeRoom> rooms = RoomsOf(s);
  ASSERT_EQ(rooms.size(), 3u);
  EXPECT_EQ(rooms[0].name, "gpu-a");
  EXPECT_EQ(Get(rooms[0].allocatable, "nvidia.com/gpu"), 8);
  EXPECT_EQ(Get(rooms[0].free, "nvidia.com/gpu"), 5);
  EXPECT_EQ(Get(rooms[0].free, "cpu"), 60000);
  EXPECT_EQ(Get(rooms[1].allocatable, "nvidia.com/gpu"), 8);
  EXPECT_EQ(Get(rooms[1].free, "nvidia.com/gpu"), 0);  // not Ready: no room
  // A node that states no cpu is not checked for it: room without end.
  EXPECT_GT(Get(rooms[2].free, "cpu"), int64_t{1} << 60);
}

TEST(QueuedPodOf, AGatedPodWithItsAskPriorityArrivalAndNodes) {
  json spec = kGated;
  spec["priority"] = 1000;
  spec["nodeSelector"] = {{"kubernetes.io/hostname", "gpu-b"}};
  InventorySnapshot s = Snapshot({Node("gpu-a", 8), Node("gpu-b", 8), Pod("train", 8, spec)});
  ASSERT_EQ(s.gated().size(), 1u);
  auto q = QueuedPodOf(s.gated()[0], "gpuadmit.io/capacity", s.nodes());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->key, "ml/train");
  EXPECT_EQ(q->priority, 1000);
  EXPECT_EQ(q->arrived_at, 1795680000.0);
  EXPECT_EQ(Get(q->ask, "nvidia.com/gpu"), 8);
  EXPECT_EQ(Get(q->ask, "cpu"), 4000);
  EXPECT_EQ(q->nodes, std::vector<size_t>{1});  // gpu-b only
  EXPECT_FALSE(QueuedPodOf(s.gated()[0], "other.io/gate", s.nodes()).has_value());
}

TEST(QueuedPodOf, NoNodeItMayUseIsOnePastTheEnd) {
  json spec = kGated;
  spec["nodeSelector"] = {{"kubernetes.io/hostname", "nowhere"}};
  InventorySnapshot s = Snapshot({Node("gpu-a", 8), Pod("train", 1, spec)});
  auto q = QueuedPodOf(s.gated()[0], "gpuadmit.io/capacity", s.nodes());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->nodes, std::vector<size_t>{1});
}

}  // namespace
}  // namespace gpuadmit
