#include "core/report/consolidation.h"

#include <gtest/gtest.h>

#include "tests/core/report/report_test_cluster.h"

namespace gpuadmit {
namespace {

using report_test::GpuNode;
using report_test::GpuPod;
using report_test::MetricsOf;
using Strings = std::vector<std::string>;

std::vector<std::string> MovesOf(const Consolidation& c) {
  std::vector<std::string> out;
  for (const PodMove& m : c.moves) out.push_back(m.pod + ":" + m.from + "->" + m.to);
  return out;
}

// Four 8-GPU nodes: a holds 6 (three 2-GPU pods), b 2, c 2, d none.
struct FourNodes {
  std::vector<NodeFacts> nodes = {GpuNode("a", 8), GpuNode("b", 8), GpuNode("c", 8),
                                  GpuNode("d", 8)};
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 2), GpuPod("ml/a2", "a", 2),
                                 GpuPod("ml/a3", "a", 2), GpuPod("ml/b1", "b", 2),
                                 GpuPod("ml/c1", "c", 2)};
};

TEST(Consolidation, UnderusedByAllocationIsBelowHalfOfTheGpusAllocated) {
  FourNodes f;
  Consolidation c = Consolidate(f.nodes, f.pods, nullptr, {});
  // a: 6/8 = 75% (not underused); b, c: 2/8 = 25%; d: 0/8 = 0%.
  ASSERT_EQ(c.underused.size(), 3u);
  EXPECT_EQ(c.underused[0].node, "b");
  EXPECT_DOUBLE_EQ(c.underused[0].allocated_percent, 25.0);
  EXPECT_DOUBLE_EQ(c.underused[0].allocated_gpus, 2);
  EXPECT_DOUBLE_EQ(c.underused[0].capacity_gpus, 8);
  EXPECT_TRUE(c.underused[0].by_allocation);
  EXPECT_FALSE(c.underused[0].by_utilization);
  EXPECT_EQ(c.underused[1].node, "c");
  EXPECT_EQ(c.underused[2].node, "d");
  EXPECT_DOUBLE_EQ(c.underused[2].allocated_percent, 0);
  EXPECT_EQ(c.gpu_nodes, 4u);
  EXPECT_DOUBLE_EQ(c.capacity_gpus, 32);
  EXPECT_DOUBLE_EQ(c.allocated_gpus, 10);
}

TEST(Consolidation, RepackingFreesANodeAndMovesOnlyThePodsOfTheFreedNode) {
  FourNodes f;
  Consolidation c = Consolidate(f.nodes, f.pods, nullptr, {});
  // First fit decreasing over a (6), b (2), c (2), d (0): a1 a2 a3 b1 fill a, c1 goes to b, so
  // a and b stay in use, c is emptied. The second pass leaves a's and b's pods where they are
  // and moves c1 to the first kept node with room: a (2 free). One move, not two.
  EXPECT_EQ(c.pods_packed, 5u);
  EXPECT_EQ(c.nodes_in_use, 3u);
  EXPECT_EQ(c.nodes_in_use_after, 2u);
  EXPECT_EQ(c.freed_nodes, Strings{"c"});
  EXPECT_DOUBLE_EQ(c.potential_savings_gpus, 8);
  EXPECT_EQ(MovesOf(c), Strings{"ml/c1:c->a"});
  EXPECT_TRUE(c.unplaceable.empty());
}

TEST(Consolidation, ANodeSelectorKeepsAPodOnTheOnlyNodeItMayUse) {
  FourNodes f;
  f.nodes[2].labels["zone"] = "west";
  f.pods[4].constraints->node_selector["zone"] = "west";
  Consolidation c = Consolidate(f.nodes, f.pods, nullptr, {});
  // c1 may run on c alone, so c stays; b's pod goes to a instead (a: 6 + 2 = 8).
  EXPECT_EQ(c.freed_nodes, Strings{"b"});
  EXPECT_EQ(MovesOf(c), Strings{"ml/b1:b->a"});
  EXPECT_DOUBLE_EQ(c.potential_savings_gpus, 8);
}

TEST(Consolidation, AnUntoleratedTaintKeepsPodsOffTheNodeWithRoom) {
  // a holds 4 of 8 behind a NoSchedule taint its pod tolerates; b holds 2. Untainted, b1 would
  // join a and free b.
  std::vector<NodeFacts> nodes = {GpuNode("a", 8), GpuNode("b", 8)};
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 4), GpuPod("ml/b1", "b", 2)};
  Consolidation open = Consolidate(nodes, pods, nullptr, {});
  EXPECT_EQ(open.freed_nodes, Strings{"b"});
  EXPECT_EQ(MovesOf(open), Strings{"ml/b1:b->a"});

  nodes[0].taints.push_back({"dedicated", "team-a", "NoSchedule"});
  pods[0].constraints->tolerations.push_back({"dedicated", "Equal", "team-a", "NoSchedule"});
  Consolidation tainted = Consolidate(nodes, pods, nullptr, {});
  EXPECT_EQ(tainted.nodes_in_use, 2u);
  EXPECT_EQ(tainted.nodes_in_use_after, 2u);
  EXPECT_TRUE(tainted.freed_nodes.empty());
  EXPECT_TRUE(tainted.moves.empty());
  EXPECT_DOUBLE_EQ(tainted.potential_savings_gpus, 0);
}

TEST(Consolidation, DaemonSetPodsStayAndKeepNoNodeInUse) {
  // a: a 4-GPU pod; b: a DaemonSet pod with 1 GPU and nothing else; c: the same DaemonSet pod
  // and a 2-GPU pod.
  std::vector<NodeFacts> nodes = {GpuNode("a", 8), GpuNode("b", 8), GpuNode("c", 8)};
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 4), GpuPod("ds/b-agent", "b", 1),
                                 GpuPod("ds/c-agent", "c", 1), GpuPod("ml/c1", "c", 2)};
  pods[1].daemon_set = true;
  pods[2].daemon_set = true;
  Consolidation c = Consolidate(nodes, pods, nullptr, {});
  EXPECT_EQ(c.pods_pinned, 2u);
  EXPECT_EQ(c.pods_packed, 2u);
  // In use now: a and c (b holds only the DaemonSet pod). c1 joins a; c is freed.
  EXPECT_EQ(c.nodes_in_use, 2u);
  EXPECT_EQ(c.nodes_in_use_after, 1u);
  EXPECT_EQ(c.freed_nodes, Strings{"c"});
  EXPECT_EQ(MovesOf(c), Strings{"ml/c1:c->a"});
  // The DaemonSet pods' GPUs still count as allocated: b 1/8, c 3/8.
  ASSERT_EQ(c.underused.size(), 2u);
  EXPECT_DOUBLE_EQ(c.underused[0].allocated_percent, 12.5);
  EXPECT_DOUBLE_EQ(c.underused[1].allocated_percent, 37.5);
}

TEST(Consolidation, APodOfUnknownConstraintsMovesOnlyToANodeWithItsProduct) {
  // a: A100, 4 used; b and c: T4, 1 and 2 used; the pods built from PodRecords (no constraints).
  std::vector<NodeFacts> nodes = {GpuNode("a", 8, "NVIDIA-A100"), GpuNode("b", 8, "Tesla-T4"),
                                  GpuNode("c", 8, "Tesla-T4")};
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 4), GpuPod("ml/b1", "b", 1),
                                 GpuPod("ml/c1", "c", 2)};
  for (ReportPod& p : pods) p.constraints.reset();
  Consolidation c = Consolidate(nodes, pods, nullptr, {});
  // Order a (4), c (2), b (1): c1 may not go to a (A100), stays on c; b1 goes to c, not a.
  EXPECT_EQ(c.freed_nodes, Strings{"b"});
  EXPECT_EQ(MovesOf(c), Strings{"ml/b1:b->c"});
}

TEST(Consolidation, CpuAndMemoryRequestsMustFitToo) {
  // a has 6 GPUs free but only 0.5 CPU left after a CPU-only pod; b1 asks for 1 CPU.
  std::vector<NodeFacts> nodes = {GpuNode("a", 8), GpuNode("b", 8)};
  nodes[0].compute.cpu_milli = 3000;
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 2), GpuPod("web/a-cpu", "a", 0),
                                 GpuPod("ml/b1", "b", 1)};
  pods[1].compute.cpu_milli = 1500;  // a: 3000 - 1000 (a1) - 1500 = 500 left
  Consolidation c = Consolidate(nodes, pods, nullptr, {});
  EXPECT_EQ(c.pods_packed, 2u);  // the CPU-only pod is not packed
  EXPECT_TRUE(c.freed_nodes.empty());
  pods[1].compute.cpu_milli = 1000;  // 1000 left: b1 fits
  EXPECT_EQ(Consolidate(nodes, pods, nullptr, {}).freed_nodes, Strings{"b"});
}

TEST(Consolidation, CordonedNotReadyAndGpulessNodesAreLeftOut) {
  std::vector<NodeFacts> nodes = {GpuNode("a", 8), GpuNode("cordoned", 8), GpuNode("notready", 8),
                                  GpuNode("cpu", 0)};
  nodes[1].unschedulable = true;
  nodes[2].ready = false;
  nodes[3].allocatable.clear();
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 8), GpuPod("ml/x", "cordoned", 1),
                                 GpuPod("ml/y", "notready", 1), GpuPod("web/z", "cpu", 0)};
  Consolidation c = Consolidate(nodes, pods, nullptr, {});
  EXPECT_EQ(c.gpu_nodes, 1u);
  EXPECT_DOUBLE_EQ(c.capacity_gpus, 8);
  EXPECT_EQ(c.pods_packed, 1u);
  EXPECT_TRUE(c.underused.empty());  // a: 8/8
  EXPECT_EQ(c.nodes_in_use, 1u);
  EXPECT_EQ(c.nodes_in_use_after, 1u);
}

TEST(Consolidation, UnderusedByMeasuredUtilisationIsBelowThirtyPercentOverTheWindow) {
  std::vector<NodeFacts> nodes = {GpuNode("a", 2), GpuNode("b", 2)};
  std::vector<ReportPod> pods = {GpuPod("ml/a1", "a", 2), GpuPod("ml/b1", "b", 2)};
  // a: GPU 0 averages (10 + 30) / 2 = 20, GPU 1 averages 40: the node 30, not below 30.
  // b: GPU 0 averages 20, GPU 1 reports nothing: the node 20.
  auto metrics = MetricsOf({{{"a", 0}, {10, 30}}, {{"a", 1}, {40, 40}}, {{"b", 0}, {20, 20}}});
  Consolidation c = Consolidate(nodes, pods, metrics.get(), {});
  ASSERT_EQ(c.underused.size(), 1u);
  EXPECT_EQ(c.underused[0].node, "b");
  EXPECT_DOUBLE_EQ(c.underused[0].allocated_percent, 100);
  EXPECT_EQ(c.underused[0].utilization_percent, 20.0);
  EXPECT_FALSE(c.underused[0].by_allocation);
  EXPECT_TRUE(c.underused[0].by_utilization);
  // Thresholds are options: at 31% a is underused too.
  Consolidation wider =
      Consolidate(nodes, pods, metrics.get(),
                  {.underused_allocation_percent = 50, .underused_utilization_percent = 31});
  EXPECT_EQ(wider.underused.size(), 2u);
}

TEST(Consolidation, MigSlicesAndSharedReplicasCountAsGpuEquivalents) {
  NodeFacts mig = GpuNode("mig", 0);
  mig.allocatable = {{"nvidia.com/mig-1g.10gb", 7}};
  NodeFacts shared = GpuNode("shared", 0);
  shared.allocatable = {{"nvidia.com/gpu", 8}};  // 2 GPUs x 4 replicas, renameByDefault off
  shared.labels["nvidia.com/gpu.replicas"] = "4";
  shared.gpu.sharing_strategy = "time-slicing";
  EXPECT_DOUBLE_EQ(NodeGpuCapacity(mig), 1);
  EXPECT_DOUBLE_EQ(NodeGpuCapacity(shared), 2);
  ReportPod slice = GpuPod("ml/s", "mig", 0);
  slice.need = {{"nvidia.com/mig-1g.10gb", 2}};
  Consolidation c =
      Consolidate(std::vector<NodeFacts>{mig, shared},
                  std::vector<ReportPod>{slice, GpuPod("ml/r", "shared", 1)}, nullptr, {});
  // mig: 2/7 of a GPU = 28.6%; shared: one replica of 4 = 0.25 of 2 GPUs = 12.5%.
  ASSERT_EQ(c.underused.size(), 2u);
  EXPECT_NEAR(c.underused[0].allocated_percent, 200.0 / 7, 1e-9);
  EXPECT_DOUBLE_EQ(c.underused[1].allocated_percent, 12.5);
  // Neither pod may use the other's resource: nothing to free.
  EXPECT_TRUE(c.freed_nodes.empty());
}

}  // namespace
}  // namespace gpuadmit
