#include "core/report/report_pod.h"

#include <gtest/gtest.h>

#include "core/report/report.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(ReportClusterFromList, ReadsNodesPodsConstraintsAndDaemonSetOwners) {
  json list = json::parse(R"({"apiVersion": "v1", "kind": "List", "items": [
    {"kind": "Node", "metadata": {"name": "gpu-1", "labels": {"zone": "west"}},
     "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64"},
                "conditions": [{"type": "Ready", "status": "True"}]}},
    {"kind": "Pod", "metadata": {"name": "agent", "namespace": "gpu-operator",
       "ownerReferences": [{"kind": "DaemonSet", "name": "dcgm"}]},
     "spec": {"nodeName": "gpu-1", "containers": [{"name": "c"}]},
     "status": {"phase": "Running"}},
    {"kind": "Pod", "metadata": {"name": "train", "namespace": "ml",
       "ownerReferences": [{"kind": "Job", "name": "train"}]},
     "spec": {"nodeName": "gpu-1", "nodeSelector": {"zone": "west"},
              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
              "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"},
                                                         "requests": {"cpu": "2"}}}]},
     "status": {"phase": "Running"}},
    {"kind": "Service", "metadata": {"name": "ignored"}}
  ]})");
  auto cluster = ReportClusterFromList(list);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  ASSERT_EQ(cluster.value().nodes.size(), 1u);
  EXPECT_EQ(cluster.value().nodes[0].name, "gpu-1");
  EXPECT_EQ(Get(cluster.value().nodes[0].allocatable, "nvidia.com/gpu"), 8);
  ASSERT_EQ(cluster.value().pods.size(), 2u);
  const ReportPod& agent = cluster.value().pods[0];
  EXPECT_EQ(agent.key, "gpu-operator/agent");
  EXPECT_TRUE(agent.daemon_set);
  const ReportPod& train = cluster.value().pods[1];
  EXPECT_EQ(train.key, "ml/train");
  EXPECT_FALSE(train.daemon_set);
  EXPECT_EQ(train.node, "gpu-1");
  EXPECT_EQ(train.need, (ResourceList{{"nvidia.com/gpu", 2}}));
  EXPECT_EQ(train.compute.cpu_milli, 2000);
  ASSERT_TRUE(train.constraints.has_value());
  EXPECT_EQ(train.constraints->node_selector,
            (std::map<std::string, std::string>{{"zone", "west"}}));
  ASSERT_EQ(train.constraints->tolerations.size(), 1u);
  EXPECT_EQ(train.constraints->tolerations[0].key, "nvidia.com/gpu");
}

TEST(ReportClusterFromList, CountsDraDevicesAsTheInventoryDoesAndGivesClaimedOnesToTheirPods) {
  // Two H200 nodes whose MIG devices only DRA publishes; the claim ml/held (made for no pod)
  // holds a 2g.20gb, and the claim made for the bound pod ml/trainer a 1g.10gb.
  json list = testing::ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  list["items"].push_back(json::parse(R"({"kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "ml"},
    "spec": {"nodeName": "h200-small", "resourceClaims": [{"name": "gpu",
             "resourceClaimTemplateName": "mig-1g"}],
             "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]},
    "status": {"phase": "Running"}})"));
  list["items"].push_back(json::parse(R"({"kind": "ResourceClaim",
    "metadata": {"name": "trainer-gpu-x7k2p", "namespace": "ml",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer"}]},
    "status": {"allocation": {"devices": {"results": [{"request": "gpu",
      "driver": "gpu.nvidia.com", "pool": "h200-small", "device": "gpu-0-mig-1g10gb-19-0"}]}}}})"));
  auto cluster = ReportClusterFromList(list);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  ASSERT_EQ(cluster.value().nodes.size(), 2u);
  EXPECT_EQ(Get(cluster.value().nodes[0].allocatable, "nvidia.com/mig-1g.10gb"), 28);
  EXPECT_EQ(Get(cluster.value().nodes[1].allocatable, "nvidia.com/mig-2g.20gb"), 12);
  ASSERT_EQ(cluster.value().pods.size(), 2u);
  const ReportPod& trainer = cluster.value().pods[0];
  EXPECT_EQ(trainer.key, "ml/trainer");
  EXPECT_EQ(trainer.need, (ResourceList{{"nvidia.com/mig-1g.10gb", 1}}));
  const ReportPod& held = cluster.value().pods[1];
  EXPECT_EQ(held.key, "claim ml/held");
  EXPECT_EQ(held.node, "h200-medium");
  EXPECT_EQ(held.need, (ResourceList{{"nvidia.com/mig-2g.20gb", 1}}));
  Report report = BuildReport({.nodes = cluster.value().nodes, .pods = cluster.value().pods}, {});
  EXPECT_EQ(report.consolidation.gpu_nodes, 2u);
  EXPECT_GT(report.consolidation.allocated_gpus, 0);
}

TEST(ReportClusterFromList, AListWithoutItemsIsAnError) {
  auto cluster = ReportClusterFromList(json::parse(R"({"kind": "List"})"));
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.error().message, "the cluster list has no \"items\" array");
}

TEST(ReportPodFromRecord, ABoundPodHasUnknownConstraints) {
  PodRecord bound{.key = "ml/a", .node = "gpu-1", .need = {{"nvidia.com/gpu", 1}}};
  ReportPod p = ReportPodFromRecord(bound);
  EXPECT_EQ(p.key, "ml/a");
  EXPECT_EQ(p.node, "gpu-1");
  EXPECT_EQ(p.need, bound.need);
  EXPECT_FALSE(p.constraints.has_value());
  EXPECT_FALSE(p.daemon_set);
}

}  // namespace
}  // namespace gpuadmit
