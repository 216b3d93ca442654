// Plan stage 4, the queue gate (issue 18), through Plan() so that placement's part is seen too:
// when a Pod is gated (queue on for its namespace, a GPU ask that fits on no node it may use, or
// pods already waiting), and what a gated pod gets (the gate, the reason, worker defaults) and
// does not (node affinity, claims, even those of a MIG fallback).
#include "core/plan/queue_gate.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::GpuNode;
using testing::ListOf;
using testing::SnapshotOf;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char kGate[] = "gpuadmit.io/capacity";
constexpr char kQueueAnnotation[] = "gpuadmit.io/queue";

// An unbound Pod of `ns` asking `gpus` GPUs, held back by gpuadmit's gate.
json GatedPod(const std::string& name, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec",
           {{"schedulingGates", {{{"name", kGate}}}},
            {"containers",
             {{{"name", "main"}, {"resources", {{"limits", {{kGpu, std::to_string(gpus)}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

// gpu-a has 2 of 4 GPUs free, gpu-b none of 2.
json TwoNodes() {
  json cluster = ListOf({GpuNode("gpu-a", 4), GpuNode("gpu-b", 2)});
  AddBoundPods(cluster, "gpu-a", kGpu, 2);
  AddBoundPods(cluster, "gpu-b", kGpu, 2);
  return cluster;
}

json GpuPodSpec(int gpus) {
  return {{"containers",
           {{{"name", "main"},
             {"image", "cuda"},
             {"resources", {{"limits", {{kGpu, std::to_string(gpus)}}}}}}}}};
}

Policy Queueing() {
  Policy policy;
  policy.queue.enabled = true;
  policy.worker_defaults.shm_size = "1Gi";
  return policy;
}

std::string QueueNote(const Decision& d) {
  for (const auto& [k, v] : d.annotations) {
    if (k == kQueueAnnotation) return v;
  }
  return "";
}

TEST(QueueGate, GatesAPodOnlyWhenItWouldWaitAndTheQueueIsOnForIt) {
  InventorySnapshot plain = SnapshotOf(TwoNodes());
  json with_waiting = TwoNodes();
  with_waiting["items"].push_back(GatedPod("waiting", 1));
  InventorySnapshot waiting = SnapshotOf(with_waiting);
  ASSERT_EQ(waiting.GatedBy(kGate), 1u);
  struct Case {
    std::string label;
    int gpus;
    std::string reason;  // "": not gated
    bool enabled = true;
    std::vector<std::string> namespaces = {};
    const InventorySnapshot* snapshot = nullptr;  // plain when null
    json extra = json::object();                  // merged into the spec
    json metadata = json::object();
    bool is_pod = true;
  } cases[] = {
      {"queue disabled", 4, "", false},
      {"namespace not listed", 4, "", true, {"ml"}},
      {"fits on gpu-a", 2, ""},
      {"fits nowhere", 4, "waiting: 4 nvidia.com/gpu free on no node it may use"},
      {"namespace listed",
       4,
       "waiting: 4 nvidia.com/gpu free on no node it may use",
       true,
       {"ml", "default"}},
      {"fits, but a pod waits already",
       1,
       "waiting: behind 1 pod in the capacity queue",
       true,
       {},
       &waiting},
      {"fits nowhere, behind a pod",
       3,
       "waiting: 3 nvidia.com/gpu free on no node it may use",
       true,
       {},
       &waiting},
      {"nodeName set", 4, "", true, {}, &waiting, {{"nodeName", "gpu-b"}}},
      {"opted out",
       4,
       "",
       true,
       {},
       &waiting,
       json::object(),
       {{"annotations", {{"gpuadmit.io/optimize", "false"}}}}},
      {"a template", 4, "", true, {}, &waiting, json::object(), json::object(), false},
      {"no GPU asked", 0, "", true, {}, &waiting},
  };
  for (const Case& c : cases) {
    Policy policy = Queueing();
    policy.queue.enabled = c.enabled;
    policy.queue.namespaces = c.namespaces;
    json spec = GpuPodSpec(c.gpus);
    if (c.gpus == 0) spec["containers"][0].erase("resources");
    spec.update(c.extra);
    PodRequest pod = PodRequest::From("default", "Pod default/p", spec, &c.metadata, c.is_pod);
    const InventorySnapshot& s = c.snapshot != nullptr ? *c.snapshot : plain;
    Decision d = Plan(pod, {s, policy});
    bool gated = !c.reason.empty();
    EXPECT_EQ(d.scheduling_gate, gated ? kGate : "") << c.label;
    EXPECT_EQ(QueueNote(d), c.reason) << c.label;
    EXPECT_EQ(d.tally.Count(DecisionPoint::kQueueGated), gated ? 1u : 0u) << c.label;
    EXPECT_EQ(d.Changes(), gated || c.gpus > 0) << c.label;
    if (!gated) continue;
    EXPECT_TRUE(d.required.empty() && d.preferred.empty()) << c.label;
    EXPECT_TRUE(d.claims.empty()) << c.label;
    EXPECT_TRUE(d.node.empty()) << c.label;
    EXPECT_EQ(d.tally.Count(DecisionPoint::kPlacementChosen) +
                  d.tally.Count(DecisionPoint::kPlacementNone),
              0u)
        << c.label;
    EXPECT_EQ(d.shm_size, "1Gi") << c.label;  // worker defaults still apply
    EXPECT_TRUE(d.warnings.empty()) << c.label;
    EXPECT_NE(
        std::find(d.trail.begin(), d.trail.end(), "queue: gated gpuadmit.io/capacity: " + c.reason),
        d.trail.end())
        << c.label;
  }
}

TEST(QueueGate, APodThatFitsGoesStraightOnAndIsPlacedAsEver) {
  InventorySnapshot s = SnapshotOf(TwoNodes());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Decision d = Plan(pod, {s, Queueing()});
  EXPECT_EQ(d.scheduling_gate, "");
  EXPECT_EQ(d.node, "gpu-a");
  EXPECT_EQ(d.claims, (std::vector<Claim>{{"gpu-a", kGpu, 2, 2}}));
}

TEST(QueueGate, TheGateNameFollowsTheAnnotationPrefix) {
  Policy policy = Queueing();
  policy.annotation_prefix = "example.com";
  EXPECT_EQ(CapacityGate(policy), "example.com/capacity");
  InventorySnapshot s = SnapshotOf(TwoNodes());
  json spec = GpuPodSpec(4);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Decision d = Plan(pod, {s, policy});
  EXPECT_EQ(d.scheduling_gate, "example.com/capacity");
  ASSERT_FALSE(d.annotations.empty());
  EXPECT_EQ(d.annotations.back().first, "example.com/queue");
}

// Reservations that hold `held` GPUs of every node.
class FixedReservations : public Reservations {
 public:
  explicit FixedReservations(int64_t held) : held_(held) {}
  int64_t Reserved(std::string_view, std::string_view, std::string_view) const override {
    return held_;
  }
  bool Holds(std::string_view, std::string_view) const override { return false; }
  bool Commit(const std::string&, const std::string&, const std::vector<Claim>&) override {
    return true;
  }

 private:
  int64_t held_;
};

TEST(QueueGate, DevicesReservedForOtherPodsAreNotFree) {
  InventorySnapshot s = SnapshotOf(TwoNodes());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy = Queueing();
  FixedReservations one(1);
  Decision d = Plan(pod, {s, policy, nullptr, &one});
  EXPECT_EQ(d.scheduling_gate, kGate);
  EXPECT_EQ(QueueNote(d), "waiting: 2 nvidia.com/gpu free on no node it may use");
}

TEST(QueueGate, WorkerDefaultTolerationsOpenTheTaintedNodesItMayUse) {
  json cluster = TwoNodes();
  for (json& item : cluster["items"]) {
    if (item["kind"] == "Node") {
      item["spec"]["taints"] = {{{"key", kGpu}, {"value", "present"}, {"effect", "NoSchedule"}}};
    }
  }
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy = Queueing();
  EXPECT_EQ(Plan(pod, {s, policy}).scheduling_gate, kGate);  // no node it may use
  policy.worker_defaults.tolerations = {{kGpu, "Exists", "", "NoSchedule"}};
  Decision d = Plan(pod, {s, policy});
  EXPECT_EQ(d.scheduling_gate, "");
  EXPECT_EQ(d.node, "gpu-a");
}

TEST(QueueGate, AGatedPodKeepsItsMigFallbackButNotTheDevicesItCounted) {
  json cluster = testing::DemoCluster();
  AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);  // none of 2g.20gb free
  json waiting = GatedPod("waiting", 1);
  waiting["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", "1"}};
  cluster["items"].push_back(waiting);
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = {
      {"containers",
       {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/mig-2g.20gb", "1"}}}}}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Decision d = Plan(pod, {s, Queueing()});
  ASSERT_EQ(d.swaps.size(), 1u);
  EXPECT_EQ(d.swaps[0].to, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(d.tally.Count(DecisionPoint::kMigFallback), 1u);
  EXPECT_EQ(d.scheduling_gate, kGate);
  EXPECT_EQ(QueueNote(d), "waiting: behind 1 pod in the capacity queue");
  EXPECT_TRUE(d.claims.empty());
  EXPECT_TRUE(d.required.empty() && d.preferred.empty());
}

TEST(QueueGate, AGatedPodIsNotSaidToBeLeftUnchanged) {
  json cluster = testing::DemoCluster();
  AddBoundPods(cluster, "gpu-small", "nvidia.com/mig-1g.10gb", 28);
  AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-1g.10gb", 4);
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = {
      {"containers",
       {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}}}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  const std::string exhausted =
      "nvidia.com/mig-1g.10gb is free on no node Pod default/p may use, and no smaller MIG "
      "profile is either";
  Decision waits = Plan(pod, {s, Queueing()});
  EXPECT_EQ(waits.scheduling_gate, kGate);
  EXPECT_EQ(waits.warnings, std::vector<std::string>{
                                exhausted + "; held back by the scheduling gate " + kGate +
                                " until it fits"});
  Decision passes = Plan(pod, {s, Policy{}});
  EXPECT_EQ(passes.scheduling_gate, "");
  EXPECT_EQ(passes.warnings, std::vector<std::string>{exhausted + "; left unchanged"});
}

}  // namespace
}  // namespace gpuadmit
