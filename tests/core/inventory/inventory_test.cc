#include "core/inventory/inventory.h"

#include <gtest/gtest.h>

#include "core/json/yaml_json.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::DemoCluster;
using testing::SnapshotOf;

const NodeInventory& Node(const InventorySnapshot& s, const std::string& name) {
  for (const NodeInventory& n : s.nodes()) {
    if (n.name() == name) return n;
  }
  throw std::runtime_error("no node " + name);
}

TEST(InventorySnapshot, DemoClusterHasSeed003CapacityAndItsRunningPodsSubtracted) {
  InventorySnapshot s = SnapshotOf(DemoCluster());
  ASSERT_EQ(s.nodes().size(), 3u);
  const NodeInventory& small = Node(s, "gpu-small");
  const NodeInventory& medium = Node(s, "gpu-medium");
  EXPECT_EQ(small.facts->allocatable,
            (ResourceList{{"nvidia.com/gpu", 0}, {"nvidia.com/mig-1g.10gb", 28}}));
  EXPECT_EQ(small.Free("nvidia.com/mig-1g.10gb"), 22);
  EXPECT_EQ(medium.Free("nvidia.com/mig-2g.20gb"), 7);  // the Succeeded pod frees its device
  EXPECT_EQ(medium.Free("nvidia.com/mig-1g.10gb"), 3);
  EXPECT_EQ(small.Product(), "NVIDIA-H200");
  EXPECT_TRUE(small.facts->ready);
  // qwen-eval: unbound, and marked Unschedulable for want of CPU, so it holds no device
  EXPECT_EQ(s.queued(), (ResourceList{{"nvidia.com/mig-2g.20gb", 1}}));
  EXPECT_EQ(s.unplaceable(), (ResourceList{{"nvidia.com/mig-2g.20gb", 1}}));
  const NodeInventory& control = Node(s, "gpu-sim-control-plane");
  ASSERT_EQ(control.facts->taints.size(), 1u);
  EXPECT_EQ(control.facts->taints[0].effect, "NoSchedule");
}

TEST(InventorySnapshot, FreeNeverGoesBelowZero) {
  json cluster = DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 9);
  EXPECT_EQ(Node(SnapshotOf(cluster), "gpu-medium").Free("nvidia.com/mig-2g.20gb"), 0);
}

TEST(InventorySnapshot, ReadsRealNodeObjects) {
  auto node = YamlToJson(testing::ReadSourceFile(
      "tests/fixtures/nodes/a100-sxm4-40gb-mig-mixed-3x1g.5gb-1x2g.10gb-kubectl-edit.yaml"));
  ASSERT_TRUE(node.ok()) << node.error().message;
  InventorySnapshot s = SnapshotOf(json{{"items", {node.value()}}});
  ASSERT_EQ(s.nodes().size(), 1u);
  // Capacity says one 3g.20gb, allocatable says none: allocatable is what can be scheduled.
  EXPECT_EQ(s.nodes()[0].facts->allocatable, (ResourceList{{"nvidia.com/gpu", 0},
                                                           {"nvidia.com/mig-1g.5gb", 3},
                                                           {"nvidia.com/mig-2g.10gb", 1},
                                                           {"nvidia.com/mig-3g.20gb", 0}}));
  EXPECT_EQ(s.nodes()[0].Product(), "NVIDIA-A100-SXM4-40GB");
  EXPECT_TRUE(s.nodes()[0].facts->ready);
}

TEST(InventorySnapshot, AListWithoutItemsIsAnError) {
  auto s = InventorySnapshot::FromObjects(json{{"kind", "List"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "the cluster list has no \"items\" array");
}

}  // namespace
}  // namespace gpuadmit
