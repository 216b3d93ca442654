#include "core/sim/scheduler_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fakes/sim_node.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

SimNode Node(const std::string& name, int64_t cpu_milli = 4000, int64_t memory = 8 * kGi) {
  return testing::ReadySimNode(name, {cpu_milli, memory, 110, {{k1g, 7}}});
}

SimNode With(SimNode n, const std::function<void(NodeFacts&)>& change) {
  auto facts = std::make_shared<NodeFacts>(*n.facts);
  change(*facts);
  n.facts = facts;
  return n;
}

// A pod of one container requesting `cpu` and `memory` (Kubernetes quantities), `extra` merged
// into its spec.
SimPod Pod(const std::string& cpu = "1", const std::string& memory = "2Gi",
           json extra = json::object()) {
  json spec = {
      {"containers",
       {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}}}};
  spec.update(extra);
  return SimPodFromSpec(spec);
}

TEST(SchedulerModel, FiltersRejectEachNodeForItsReason) {
  SimPod pod = Pod();
  EXPECT_EQ(FilterReason(pod, Node("a")), "");
  EXPECT_EQ(FilterReason(pod, With(Node("a"), [](NodeFacts& f) { f.unschedulable = true; })),
            "cordoned");
  EXPECT_EQ(FilterReason(pod, With(Node("a"), [](NodeFacts& f) { f.ready = false; })), "not ready");
  SimNode tainted = With(Node("a"), [](NodeFacts& f) {
    f.taints = {{"nvidia.com/gpu", "", "NoSchedule"}};
  });
  EXPECT_EQ(FilterReason(pod, tainted), "taint nvidia.com/gpu:NoSchedule not tolerated");
  SimPod tolerant =
      Pod("1", "2Gi", {{"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}}});
  EXPECT_EQ(FilterReason(tolerant, tainted), "");
  EXPECT_EQ(FilterReason(Pod("1", "2Gi", {{"nodeSelector", {{"pool", "h200"}}}}), Node("a")),
            "nodeSelector pool differs");
  EXPECT_EQ(FilterReason(Pod("1", "2Gi", {{"nodeName", "b"}}), Node("a")), "bound to another node");
  EXPECT_EQ(FilterReason(Pod("5", "2Gi"), Node("a")), "insufficient cpu");
  json gpus = {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{k1g, "8"}}}}}}}}};
  EXPECT_EQ(FilterReason(SimPodFromSpec(gpus), Node("a")), "insufficient nvidia.com/mig-1g.10gb");
  SimNode full = Node("a");
  full.requested.pods = 110;
  EXPECT_EQ(FilterReason(pod, full), "insufficient pods");
}

TEST(SchedulerModel, ScoresAreUpstreamsWeightedSumOfNormalisedPluginScores) {
  SimNode a = Node("a");
  SimNode b = Node("b");
  Bind(Pod("2", "0"), b);  // b: half its CPU requested, no memory
  SimPod pod = Pod("1", "2Gi");
  std::vector<SimNode> nodes = {a, b};
  // a: TaintToleration 3 x 100 (none intolerable), NodeAffinity 2 x 0, LeastAllocated
  //    (75 + 75) / 2 = 75, BalancedAllocation (1 - |0.25 - 0.25| / 2) x 100 = 100.
  // b: 300 + 0 + ((4000 - 3000) x 100 / 4000 + 75) / 2 = 50 + (1 - |0.75 - 0.25| / 2) x 100 = 75.
  EXPECT_EQ(ScoreNodes(pod, nodes), (std::vector<int64_t>{475, 425}));
  EXPECT_EQ(Schedule(pod, nodes), 0u);
}

TEST(SchedulerModel, APreferredTermOutweighsASpreadingDifference) {
  SimNode a = Node("a");
  SimNode b = Node("b");
  Bind(Pod("2", "0"), b);
  json prefer_b = json::parse(R"({"affinity":{"nodeAffinity":{
    "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"preference":{
    "matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["b"]}]}}]}}})");
  std::vector<SimNode> nodes = {a, b};
  // NodeAffinity: b's 50 normalises to 100, x2: 425 + 200 against a's 475.
  EXPECT_EQ(ScoreNodes(Pod("1", "2Gi", prefer_b), nodes), (std::vector<int64_t>{475, 625}));
  EXPECT_EQ(Schedule(Pod("1", "2Gi", prefer_b), nodes), 1u);
}

TEST(SchedulerModel, AnIntolerablePreferNoScheduleTaintCostsTheTaintTolerationWeight) {
  SimNode a = With(Node("a"), [](NodeFacts& f) { f.taints = {{"spot", "", "PreferNoSchedule"}}; });
  std::vector<SimNode> nodes = {a, Node("b")};
  EXPECT_EQ(ScoreNodes(Pod(), nodes), (std::vector<int64_t>{175, 475}));
  SimPod tolerant = Pod("1", "2Gi", {{"tolerations", {{{"key", "spot"}, {"operator", "Exists"}}}}});
  EXPECT_EQ(ScoreNodes(tolerant, nodes), (std::vector<int64_t>{475, 475}));
  EXPECT_EQ(Schedule(tolerant, nodes), 0u);  // a tie: the first in name order
}

TEST(SchedulerModel, APodWithoutRequestsIsScoredWithTheDefaultsAndNotBalanced) {
  json spec = {{"containers", {{{"name", "c"}}}}};
  SimPod pod = SimPodFromSpec(spec);
  EXPECT_EQ(pod.nonzero_cpu_milli, kDefaultMilliCpuRequest);
  EXPECT_EQ(pod.nonzero_memory, kDefaultMemoryRequest);
  EXPECT_EQ(pod.requests.cpu_milli, 0);
  std::vector<SimNode> nodes = {Node("a", 1000, kGi)};
  // LeastAllocated: cpu (1000 - 100) x 100 / 1000 = 90, memory (1024 - 200) x 100 / 1024 = 80.
  EXPECT_EQ(ScoreNodes(pod, nodes), (std::vector<int64_t>{300 + (90 + 80) / 2}));
}

TEST(SchedulerModel, RequestsAreTheEffectiveOnesOfContainersInitContainersAndLimits) {
  json spec = json::parse(R"({
    "initContainers":[{"name":"warm","resources":{"requests":{"cpu":"3","memory":"1Gi"}}}],
    "containers":[
      {"name":"a","resources":{"limits":{"cpu":"500m","memory":"4Gi","nvidia.com/mig-1g.10gb":"1"}}},
      {"name":"b","resources":{"requests":{"cpu":"1"}}}]})");
  SimPod pod = SimPodFromSpec(spec);
  EXPECT_EQ(pod.requests, (SimResources{3000, 4 * kGi, 0, {{k1g, 1}}}));
  EXPECT_EQ(pod.nonzero_cpu_milli, 3000);  // the init container's 3 CPUs outweigh 1.5
  EXPECT_EQ(pod.nonzero_memory, 4 * kGi + kDefaultMemoryRequest);  // b states no memory
}

TEST(SchedulerModel, NoNodeFitsNoSchedule) {
  std::vector<SimNode> nodes = {Node("a", 500), Node("b", 500)};
  EXPECT_EQ(Schedule(Pod("1"), nodes), std::nullopt);
  EXPECT_EQ(ScoreNodes(Pod("1"), nodes), (std::vector<int64_t>{-1, -1}));
}

TEST(SchedulerModel, TheSearchLooksForUpstreamsNumberOfFeasibleNodes) {
  EXPECT_EQ(NodesToFind(50, 0), 50u);       // below 100: every node
  EXPECT_EQ(NodesToFind(1213, 0), 497u);    // 50 - 1213/125 = 41%
  EXPECT_EQ(NodesToFind(5000, 0), 500u);    // 10%
  EXPECT_EQ(NodesToFind(20000, 0), 1000u);  // at least 5%
  EXPECT_EQ(NodesToFind(150, 0), 100u);     // at least 100
  EXPECT_EQ(NodesToFind(5000, 100), 5000u);
}

TEST(SchedulerModel, EachSearchStartsWhereTheLastStopped) {
  std::vector<SimNode> nodes;
  for (int i = 0; i < 200; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "n%03d", i);
    nodes.push_back(Node(name));
  }
  SchedulerSearch search;  // 200 nodes: 49%, so the minimum of 100
  EXPECT_EQ(Schedule(Pod("1"), nodes, &search), 0u);
  EXPECT_EQ(search.next_start, 100u);
  EXPECT_EQ(Schedule(Pod("1"), nodes, &search), 100u);
  EXPECT_EQ(search.next_start, 0u);
  EXPECT_EQ(Schedule(Pod("1"), nodes), 0u);  // without a search: every node, the first best
}

TEST(SchedulerModel, BindAndUnbindMoveEveryRequestAndThePodCount) {
  SimNode n = Node("a");
  SimPod pod = Pod("1", "2Gi");
  Bind(pod, n);
  EXPECT_EQ(n.requested, (SimResources{1000, 2 * kGi, 1, {}}));
  EXPECT_EQ(n.nonzero_cpu_milli, 1000);
  Unbind(pod, n);
  EXPECT_EQ(n.requested, (SimResources{0, 0, 0, {}}));
  EXPECT_EQ(n.nonzero_memory, 0);
}

}  // namespace
}  // namespace gpuadmit
