// The offline oracle on seed 003's cluster (12 mig-2g.20gb, 32 mig-1g.10gb): the most single-MIG
// pods any placement could run, with fallback to smaller profiles and never to larger ones.
#include "core/sim/oracle.h"

#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

json Seed003Nodes() {
  json demo = testing::DemoCluster();
  json nodes = json::array();
  for (const json& item : demo["items"]) {
    if (item["kind"] == "Node") nodes.push_back(item);
  }
  return testing::ListOf(nodes);
}

Arrival Asking(const std::string& name, const std::string& resource, int count = 1) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "ml"}}},
      {"spec",
       {{"containers",
         {{{"name", "c"}, {"resources", {{"limits", {{resource, std::to_string(count)}}}}}}}}}}};
  return {0, std::nullopt, pod};
}

std::vector<Arrival> Pods(int n, const std::string& resource) {
  std::vector<Arrival> out;
  for (int i = 0; i < n; ++i) out.push_back(Asking(resource + std::to_string(i), resource));
  return out;
}

TEST(MigOracle, LargerAsksMayUseSmallerInstancesButNotTheOtherWayRound) {
  OracleResult twenty = MigOracle(Seed003Nodes(), Pods(20, "nvidia.com/mig-2g.20gb"));
  EXPECT_TRUE(twenty.applies);
  EXPECT_EQ(twenty.pods, 20);
  EXPECT_EQ(twenty.placeable, 20);
  EXPECT_EQ(MigOracle(Seed003Nodes(), Pods(60, "nvidia.com/mig-2g.20gb")).placeable, 44);
  EXPECT_EQ(MigOracle(Seed003Nodes(), Pods(60, "nvidia.com/mig-1g.10gb")).placeable, 32);
}

TEST(MigOracle, BoundPodsTakeTheirInstancesAndConstraintsLimitTheEdges) {
  // The demo's bound pods hold 5 of the 12 2g.20gb and 7 of the 32 1g.10gb; the Succeeded
  // finetune pod holds nothing and the queued qwen-eval is not bound.
  json cluster = testing::DemoCluster();
  EXPECT_EQ(MigOracle(cluster, Pods(60, "nvidia.com/mig-2g.20gb")).placeable, 7 + 25);
  std::vector<Arrival> pinned = Pods(20, "nvidia.com/mig-2g.20gb");
  for (Arrival& a : pinned)
    a.pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "gpu-medium"}};
  // gpu-medium alone: 12 of 2g.20gb and 4 of 1g.10gb.
  EXPECT_EQ(MigOracle(Seed003Nodes(), pinned).placeable, 16);
}

TEST(MigOracle, DoesNotApplyToStreamsWithOtherAsks) {
  std::vector<Arrival> mixed = Pods(3, "nvidia.com/mig-1g.10gb");
  mixed.push_back(Asking("whole", "nvidia.com/gpu"));
  EXPECT_FALSE(MigOracle(Seed003Nodes(), mixed).applies);
  std::vector<Arrival> two = {Asking("two", "nvidia.com/mig-1g.10gb", 2)};
  EXPECT_FALSE(MigOracle(Seed003Nodes(), two).applies);
  std::vector<Arrival> cpu_only = {Asking("cpu", "cpu")};
  OracleResult none = MigOracle(Seed003Nodes(), cpu_only);
  EXPECT_TRUE(none.applies);
  EXPECT_EQ(none.pods, 0);
}

}  // namespace
}  // namespace gpuadmit
