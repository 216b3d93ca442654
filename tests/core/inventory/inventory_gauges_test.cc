#include "core/inventory/inventory_gauges.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/inventory/cluster_state.h"

namespace gpuadmit {
namespace {

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

NodeFacts Node(std::string name, ResourceList allocatable) {
  NodeFacts n;
  n.name = std::move(name);
  n.ready = true;
  n.allocatable = std::move(allocatable);
  return n;
}

PodRecord Pod(std::string key, std::string node, ResourceList need) {
  PodRecord p;
  p.key = std::move(key);
  p.node = std::move(node);
  p.need = std::move(need);
  if (p.node.empty()) p.queued = std::make_shared<const QueuedFacts>();
  return p;
}

// n1: 4 2g.20gb and 7 1g.10gb; n2: 2 2g.20gb. One 2g and three 1g bound on n1, one 2g queued
// onto n2, one 2g reserved on n1.
ClusterState SmallCluster() {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", {{k2g, 4}, {k1g, 7}}));
  state.UpsertNode(Node("n2", {{k2g, 2}}));
  state.UpsertPod(Pod("ns/a", "n1", {{k2g, 1}}));
  state.UpsertPod(Pod("ns/b", "n1", {{k1g, 3}}));
  PodRecord queued = Pod("ns/q", "", {{k2g, 1}});
  queued.wanted_node = "n2";
  state.UpsertPod(queued);
  return state;
}

const std::vector<Claim> kReserved = {{"n1", k2g, 1, 0}, {"gone", k2g, 5, 0}};

TEST(InventoryGauges, SumsEveryStateOverNodesWithFreeNetOfReservations) {
  ClusterState state = SmallCluster();
  InventorySnapshot snapshot = state.Snapshot(1);
  InventoryGauges g = ComputeInventoryGauges(snapshot, kReserved, /*per_node=*/false);
  ASSERT_EQ(g.cluster.size(), 2u);
  // 2g: n1 4 - 1 used - 1 reserved = 2 free; n2 2 - 1 queued = 1. The claim on a node the
  // snapshot does not have counts nowhere.
  EXPECT_EQ(g.cluster.at(k2g), (ResourceGauges{6, 1, 1, 1, 3}));
  EXPECT_EQ(g.cluster.at(k1g), (ResourceGauges{7, 3, 0, 0, 4}));
  EXPECT_TRUE(g.nodes.empty());
  // Nothing waits unplaceable: nothing is stranded, but every profile has its series.
  ASSERT_EQ(g.stranded_slices.size(), 2u);
  EXPECT_EQ(g.stranded_slices.at("2g.20gb"), 0);
  EXPECT_EQ(g.stranded_slices.at("1g.10gb"), 0);
}

TEST(InventoryGauges, FreeProfilesNoUnplaceablePodAsksForAreStranded) {
  ClusterState state = SmallCluster();
  PodRecord waiting = Pod("ns/u", "", {{k2g, 1}});
  auto facts = std::make_shared<QueuedFacts>();
  facts->unschedulable = true;
  waiting.queued = facts;
  state.UpsertPod(waiting);
  InventorySnapshot snapshot = state.Snapshot(1);
  ASSERT_EQ(Get(snapshot.unplaceable(), k2g), 1);
  InventoryGauges g = ComputeInventoryGauges(snapshot, kReserved, /*per_node=*/true);
  // A 2g.20gb pod waits: the 4 free 1g.10gb (1 slice each) cannot serve it; the free 2g.20gb
  // could, so they are not stranded. The waiting pod is counted on no node.
  EXPECT_EQ(g.stranded_slices.at("1g.10gb"), 4);
  EXPECT_EQ(g.stranded_slices.at("2g.20gb"), 0);
  EXPECT_EQ(g.cluster.at(k2g).queued, 1);

  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].node, "n1");
  EXPECT_EQ(g.nodes[0].resources.at(k2g), (ResourceGauges{4, 1, 0, 1, 2}));
  EXPECT_EQ(g.nodes[0].resources.at(k1g), (ResourceGauges{7, 3, 0, 0, 4}));
  EXPECT_EQ(g.nodes[0].stranded_slices.at("1g.10gb"), 4);
  EXPECT_EQ(g.nodes[1].node, "n2");
  EXPECT_EQ(g.nodes[1].resources.at(k2g), (ResourceGauges{2, 0, 1, 0, 1}));
  EXPECT_FALSE(g.nodes[1].resources.contains(k1g));
}

TEST(InventoryGauges, AResourceOnlyAPodNamesStillCounts) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", {{"nvidia.com/gpu", 8}}));
  // The node was re-cut; a pod still holds a 3g.40gb it no longer offers.
  state.UpsertPod(Pod("ns/old", "n1", {{"nvidia.com/mig-3g.40gb", 1}}));
  InventoryGauges g = ComputeInventoryGauges(state.Snapshot(1), {}, false);
  EXPECT_EQ(g.cluster.at("nvidia.com/mig-3g.40gb"), (ResourceGauges{0, 1, 0, 0, 0}));
  EXPECT_EQ(g.cluster.at("nvidia.com/gpu"), (ResourceGauges{8, 0, 0, 0, 8}));
}

}  // namespace
}  // namespace gpuadmit
