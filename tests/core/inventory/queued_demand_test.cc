// Queued demand (docs/decisions.md, "A device's life"): where the pods that wait for the scheduler
// count, through ClusterState as the inventory feeds it, from pods as the API serves them.
#include "core/inventory/queued_demand.h"

#include <gtest/gtest.h>

#include <string>

#include "core/inventory/cluster_state.h"
#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";

NodeFacts Node(std::string name, int64_t allocatable) {
  NodeFacts n;
  n.name = std::move(name);
  n.ready = true;
  n.labels["kubernetes.io/hostname"] = n.name;
  n.allocatable[k2g] = allocatable;
  return n;
}

// A pod asking `count` 2g.20gb, created at second `created` of a minute, bound to `node` ("" for
// queued), with `spec` merged into its spec and `status` into its status.
json PodJson(const std::string& name, int created, int count, const std::string& node = "",
             json spec = json::object(), json status = json::object()) {
  json pod = {{"metadata",
               {{"namespace", "ml"},
                {"name", name},
                {"creationTimestamp", "2026-11-25T10:00:" + std::string(created < 10 ? "0" : "") +
                                          std::to_string(created) + "Z"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"}, {"resources", {{"limits", {{k2g, std::to_string(count)}}}}}}}}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  pod["spec"].update(spec);
  pod["status"].update(status);
  return pod;
}

PodRecord Pod(JsonView pod) { return ReadPod(pod, "gpuadmit.io/reservation"); }

const json kUnschedulable = {{"conditions",
                              {{{"type", "PodScheduled"},
                                {"status", "False"},
                                {"reason", "Unschedulable"},
                                {"message", "0/2 nodes are available: 2 Insufficient cpu."}}}}};

TEST(QueuedDemand, APodOfDraClaimsWaitsForThemUntilTheSchedulerFindsItNoNode) {
  using Keys = std::set<std::string, std::less<>>;
  ClusterState state("gpuadmit.io/reservation");
  json pod = PodJson("claims", 1, 1, "",
                     {{"resourceClaims", {{{"name", "gpu"}, {"resourceClaimTemplateName", "t"}}}}});
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
  pod["metadata"]["annotations"] = {{"gpuadmit.io/reservation", "uid-1"}};
  state.UpsertPod(Pod(pod));
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{"uid-1"});  // its reservation lives on
  pod["status"].update(kUnschedulable);
  state.UpsertPod(Pod(pod));
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{});  // it ends with its TTL
  pod["status"] = {{"phase", "Pending"}};
  pod["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  state.UpsertPod(Pod(pod));
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{});  // not the scheduler's yet: as a gated pod
  pod["spec"].erase("schedulingGates");
  state.UpsertPod(Pod(pod));
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{"uid-1"});
}

class QueuedDemandTest : public ::testing::Test {
 protected:
  QueuedDemandTest() {
    state_.UpsertNode(Node("n1", 4));
    state_.UpsertNode(Node("n2", 4));
    state_.UpsertPod(Pod(PodJson("bound", 0, 2, "n1")));  // n1: 2 of 4 free, n2: 4 of 4
  }
  InventorySnapshot Snap() { return state_.Snapshot(++version_); }
  ClusterState state_{"gpuadmit.io/reservation"};
  uint64_t version_ = 0;
};

TEST_F(QueuedDemandTest, AQueuedPodCountsOnTheFreestNodeItMayUse) {
  state_.UpsertPod(Pod(PodJson("q", 1, 1)));
  InventorySnapshot s = Snap();
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 1);
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 3);
  EXPECT_EQ(s.FindNode("n1")->Free(k2g), 2);
  EXPECT_EQ(s.queued(), (ResourceList{{k2g, 1}}));
  EXPECT_TRUE(s.unplaceable().empty());
}

TEST_F(QueuedDemandTest, APodPinnedToANodeCountsThereAndNowhereElse) {
  json pinned = {{"nodeSelector", {{"kubernetes.io/hostname", "n1"}}}};
  state_.UpsertPod(Pod(PodJson("ds", 1, 2, "", pinned)));
  state_.UpsertPod(Pod(PodJson("ds-too-big", 2, 1, "", pinned)));  // n1 is full by then
  InventorySnapshot s = Snap();
  EXPECT_EQ(s.FindNode("n1")->Free(k2g), 0);
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 4);
  EXPECT_EQ(s.unplaceable(), (ResourceList{{k2g, 1}}));
}

TEST_F(QueuedDemandTest, TheNodeGpuadmitPreferredCountsWhenThePodFitsThere) {
  json preferred = json::parse(R"({"affinity":{"nodeAffinity":{
    "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"preference":{
    "matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}]}}]}}})");
  state_.UpsertPod(Pod(PodJson("a", 1, 2, "", preferred)));
  state_.UpsertPod(Pod(PodJson("b", 2, 1, "", preferred)));  // n1 has none left: the pool
  InventorySnapshot s = Snap();
  EXPECT_EQ(Get(s.FindNode("n1")->queued, k2g), 2);
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 1);
}

TEST_F(QueuedDemandTest, EarlierPodsAreCountedFirstWhateverTheOrderTheyArrive) {
  state_.UpsertPod(Pod(PodJson("late", 30, 4)));
  state_.UpsertPod(Pod(PodJson("early", 10, 4)));
  InventorySnapshot s = Snap();
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 4);      // early's: it was created first
  EXPECT_EQ(s.unplaceable(), (ResourceList{{k2g, 4}}));  // late fits nowhere after it
  state_.DeletePod("ml/early");
  s = Snap();
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 4);  // late's now
  EXPECT_TRUE(s.unplaceable().empty());
}

TEST_F(QueuedDemandTest, APodThatFitsNowhereHoldsNothingInPart) {
  state_.UpsertPod(Pod(PodJson("huge", 1, 5)));  // more than any node has
  state_.UpsertPod(Pod(PodJson("elsewhere", 2, 1, "", {{"nodeSelector", {{"pool", "a100"}}}})));
  InventorySnapshot s = Snap();
  EXPECT_EQ(s.FindNode("n1")->Free(k2g), 2);
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 4);
  EXPECT_EQ(s.unplaceable(), (ResourceList{{k2g, 6}}));
}

TEST_F(QueuedDemandTest, AQueuedPodUnschedulableForANonGpuReasonHoldsNothing) {
  state_.UpsertPod(Pod(PodJson("needs-cpu", 1, 1, "", json::object(), kUnschedulable)));
  InventorySnapshot s = Snap();
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 4);
  EXPECT_EQ(s.queued(), (ResourceList{{k2g, 1}}));
  EXPECT_EQ(s.unplaceable(), (ResourceList{{k2g, 1}}));
  // The scheduler tries again and binds it: now it is used where it runs.
  state_.UpsertPod(Pod(PodJson("needs-cpu", 1, 1, "n2")));
  s = Snap();
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 3);
  EXPECT_TRUE(s.queued().empty());
}

TEST_F(QueuedDemandTest, ATaintedNodeTakesOnlyPodsThatTolerateIt) {
  NodeFacts tainted = Node("n2", 4);
  tainted.taints.push_back({"nvidia.com/gpu", "", "NoSchedule"});
  state_.UpsertNode(tainted);
  state_.UpsertPod(Pod(PodJson("plain", 1, 1)));
  state_.UpsertPod(
      Pod(PodJson("tolerant", 2, 1, "",
                  {{"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}}})));
  InventorySnapshot s = Snap();
  EXPECT_EQ(Get(s.FindNode("n1")->queued, k2g), 1);  // plain: n2 is tainted for it
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 1);  // tolerant: n2 is the freest
}

TEST_F(QueuedDemandTest, ADeviceIsSpokenForFromTheWatchUntilThePodEnds) {
  EXPECT_EQ(Snap().FindNode("n2")->Free(k2g), 4);
  state_.UpsertPod(Pod(PodJson("p", 1, 1)));  // created: queued
  InventorySnapshot s = Snap();
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 3);
  EXPECT_EQ(Get(s.FindNode("n2")->queued, k2g), 1);
  state_.UpsertPod(Pod(PodJson("p", 1, 1, "n2")));  // bound: used
  s = Snap();
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 3);
  EXPECT_EQ(Get(s.FindNode("n2")->used, k2g), 1);
  EXPECT_TRUE(s.FindNode("n2")->queued.empty());
  state_.UpsertPod(Pod(PodJson("p", 1, 1, "n2", json::object(), {{"phase", "Succeeded"}})));
  EXPECT_EQ(Snap().FindNode("n2")->Free(k2g), 4);  // terminated: free
  state_.DeletePod("ml/p");
  EXPECT_EQ(Snap().FindNode("n2")->Free(k2g), 4);
  state_.UpsertPod(Pod(PodJson("gone-while-queued", 2, 1)));
  EXPECT_EQ(Snap().FindNode("n2")->Free(k2g), 3);
  state_.DeletePod("ml/gone-while-queued");  // deleted before binding
  s = Snap();
  EXPECT_EQ(s.FindNode("n2")->Free(k2g), 4);
  EXPECT_TRUE(s.queued().empty());
}

TEST(ReadPod, AQueuedPodKeepsWhatItsPlacementNeeds) {
  json pod = PodJson("q", 5, 1, "", json::parse(R"({"nodeSelector":{"pool":"h100"},
    "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]})"),
                     kUnschedulable);
  PodRecord record = Pod(pod);
  ASSERT_NE(record.queued, nullptr);
  const QueuedFacts& p = *record.queued;
  EXPECT_EQ(p.created, "2026-11-25T10:00:05Z");
  EXPECT_EQ(p.constraints.node_selector, (std::map<std::string, std::string>{{"pool", "h100"}}));
  ASSERT_EQ(p.constraints.tolerations.size(), 1u);
  EXPECT_TRUE(p.unschedulable);
  // A watch event is read off simdjson's tape: the same record comes out.
  auto lean = JsonTape::Parse(pod.dump(), 512);
  ASSERT_NE(lean, nullptr);
  PodRecord from_lean_record = Pod(lean->root());
  ASSERT_NE(from_lean_record.queued, nullptr);
  const QueuedFacts& from_lean = *from_lean_record.queued;
  EXPECT_EQ(from_lean.created, p.created);
  EXPECT_EQ(from_lean.constraints.node_selector, p.constraints.node_selector);
  EXPECT_EQ(from_lean.constraints.tolerations, p.constraints.tolerations);
  EXPECT_TRUE(from_lean.unschedulable);
  PodRecord bound = Pod(PodJson("b", 5, 1, "n1", json::object(), kUnschedulable));
  EXPECT_EQ(bound.queued, nullptr);  // read for queued pods only
}

}  // namespace
}  // namespace gpuadmit
