// Plan stage 4, placement: each strategy on one cluster, idle thresholds, no metrics, ties,
// required and preferred affinity, claims on the chosen node, GPU-type preferences, worker
// defaults, templates, opt-outs, and the explained trail (seeds 000, 001, 002, 004).
#include "core/plan/placement.h"

#include <gtest/gtest.h>

#include "core/plan/node_ranking.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::DcgmGpu;
using testing::GpuNode;
using testing::ListOf;
using testing::MetricsOf;
using testing::SnapshotOf;

constexpr char kGpu[] = "nvidia.com/gpu";

json GpuPodSpec(int gpus, json extra = json::object()) {
  json spec = {{"containers",
                {{{"name", "main"},
                  {"image", "cuda"},
                  {"resources", {{"limits", {{kGpu, std::to_string(gpus)}}}}}}}}};
  spec.update(extra);
  return spec;
}

// Runs the placement stage alone on what the pod asks as written.
Decision Place(const PodRequest& pod, const PlanContext& context, bool opted_out = false) {
  PlanState state{pod.needs.containers, pod.needs.effective};
  state.opted_out = opted_out;
  Decision d;
  PlanPlacement(pod, context, state, d);
  return d;
}

json TermsOf(const std::vector<PreferredTerm>& terms) {
  json out = json::array();
  for (const PreferredTerm& t : terms) {
    json expressions = json::array();
    for (const NodeSelectorRequirement& r : t.requirements) {
      expressions.push_back({{"key", r.key}, {"operator", r.op}, {"values", r.values}});
    }
    out.push_back({{"weight", t.weight}, {"expressions", expressions}});
  }
  return out;
}

json HostPreference(const std::string& node, int weight = 100) {
  return json::array(
      {{{"weight", weight},
        {"expressions",
         {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {node}}}}}}});
}

// gpu-01 has 1 free GPU, gpu-02 3 of 4, gpu-03 8 of 8, gpu-04 4 of 8, gpu-05 2 of 8, gpu-06 2 of 2.
json StrategyCluster() {
  json cluster = ListOf({GpuNode("gpu-01", 8), GpuNode("gpu-02", 4), GpuNode("gpu-03", 8),
                         GpuNode("gpu-04", 8), GpuNode("gpu-05", 8), GpuNode("gpu-06", 2)});
  AddBoundPods(cluster, "gpu-01", kGpu, 7);
  AddBoundPods(cluster, "gpu-02", kGpu, 1);
  AddBoundPods(cluster, "gpu-04", kGpu, 4);
  AddBoundPods(cluster, "gpu-05", kGpu, 6);
  return cluster;
}

// gpu-03's eight GPUs are busy although no pod holds them; gpu-04's four allocated ones are busy
// and its other four idle; one of gpu-02's is busy. gpu-01, gpu-05 and gpu-06 report nothing.
std::string StrategyMetrics() {
  std::string text;
  for (int g = 0; g < 8; ++g) text += DcgmGpu("gpu-03", g, 90, 11000, 4000);
  for (int g = 0; g < 4; ++g) text += DcgmGpu("gpu-04", g, 85, 10000, 5000);
  for (int g = 4; g < 8; ++g) text += DcgmGpu("gpu-04", g, 0, 150, 14850);
  text += DcgmGpu("gpu-02", 0, 95, 13500, 1500);
  for (int g = 1; g < 4; ++g) text += DcgmGpu("gpu-02", g, 0, 0, 15000);
  return text;
}

TEST(Placement, EachStrategyPicksItsOwnNodeOfTheSameCluster) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  ClusterGpuMetrics metrics = MetricsOf(StrategyMetrics());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/train", spec, nullptr, true);
  struct Case {
    PlacementStrategy strategy;
    const ClusterGpuMetrics* metrics;
    std::string node;
  } cases[] = {
      // Idle and free: gpu-04 has 4, gpu-02 3, gpu-03 none (busy), gpu-05 and gpu-06 2.
      {PlacementStrategy::kMostIdle, &metrics, "gpu-04"},
      // Without metrics every GPU is idle: the most free.
      {PlacementStrategy::kMostIdle, nullptr, "gpu-03"},
      {PlacementStrategy::kBestFit, &metrics, "gpu-05"},   // 2 free: none left; before gpu-06
      {PlacementStrategy::kFirstFit, &metrics, "gpu-02"},  // gpu-01 has too few
      {PlacementStrategy::kWorstFit, &metrics, "gpu-03"},
      // The mean of the best two GPUs' 0.6 x free memory + 0.4 x (100 - util) / 100: gpu-02's
      // idle three score 1.0, as do the unreported GPUs of gpu-05 and gpu-06; gpu-04 0.994,
      // gpu-03 0.2. The name decides among the 1.0s.
      {PlacementStrategy::kScore, &metrics, "gpu-02"},
      // Without metrics every GPU scores 1.0: the first by name with room.
      {PlacementStrategy::kScore, nullptr, "gpu-02"},
  };
  for (const Case& c : cases) {
    Policy policy;
    policy.placement.strategy = c.strategy;
    Decision d = Place(pod, {s, policy, c.metrics});
    std::string label = std::string(StrategyName(c.strategy)) + (c.metrics ? "" : " no metrics");
    EXPECT_EQ(TermsOf(d.preferred), HostPreference(c.node)) << label;
    EXPECT_TRUE(d.required.empty()) << label;
    const NodeInventory* node = s.FindNode(c.node);
    EXPECT_EQ(d.claims, (std::vector<Claim>{{c.node, kGpu, 2, node->Free(kGpu)}})) << label;
    EXPECT_TRUE(d.warnings.empty()) << label;
  }
}

// gpu-a: two GPUs idle and empty, six busy and full; gpu-b: eight GPUs half used at 50 %.
json ScoreCluster() { return ListOf({GpuNode("gpu-a", 8), GpuNode("gpu-b", 8)}); }
std::string ScoreMetrics() {
  std::string text;
  for (int g = 0; g < 2; ++g) text += DcgmGpu("gpu-a", g, 0, 0, 16000);
  for (int g = 2; g < 8; ++g) text += DcgmGpu("gpu-a", g, 100, 16000, 0);
  for (int g = 0; g < 8; ++g) text += DcgmGpu("gpu-b", g, 50, 8000, 8000);
  return text;
}

TEST(Placement, ScoreIsTheMeanOfTheBestGpusForTheAsk) {
  InventorySnapshot s = SnapshotOf(ScoreCluster());
  ClusterGpuMetrics metrics = MetricsOf(ScoreMetrics());
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kScore;
  // gpu-a's GPUs score 1.0 (idle, empty) and 0 (busy, full), gpu-b's 0.6 x 0.5 + 0.4 x 0.5 =
  // 0.5. For up to four GPUs gpu-a's best average at least 0.5 (a tie goes to the name); for
  // five, 0.4.
  struct Case {
    int gpus;
    std::string node;
  } cases[] = {{1, "gpu-a"}, {2, "gpu-a"}, {4, "gpu-a"}, {5, "gpu-b"}, {8, "gpu-b"}};
  for (const Case& c : cases) {
    json spec = GpuPodSpec(c.gpus);
    PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
    Decision d = Place(pod, {s, policy, &metrics});
    EXPECT_EQ(TermsOf(d.preferred), HostPreference(c.node)) << c.gpus << " GPUs";
  }
}

TEST(Placement, TheFilterKeepsNodesWithEnoughGpusFreeAndCoolEnough) {
  InventorySnapshot s = SnapshotOf(ScoreCluster());
  ClusterGpuMetrics metrics = MetricsOf(ScoreMetrics());
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kFirstFit;
  policy.placement.filter_min_free_memory_mib = 8000;
  policy.placement.filter_max_utilization_percent = 50;
  // gpu-a passes with two GPUs, gpu-b with all eight (8000 MiB free and 50 % are within).
  struct Case {
    int gpus;
    std::string node;
  } cases[] = {{2, "gpu-a"}, {3, "gpu-b"}, {8, "gpu-b"}};
  for (const Case& c : cases) {
    json spec = GpuPodSpec(c.gpus);
    PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
    PlanContext context{s, policy, &metrics};
    context.explain = true;
    Decision d = Place(pod, context);
    EXPECT_EQ(TermsOf(d.preferred), HostPreference(c.node)) << c.gpus << " GPUs";
  }
  // A stricter filter: gpu-b's GPUs are too busy, and no node has three that pass. The pod is
  // left to the scheduler, and the trail says each node's count.
  policy.placement.filter_max_utilization_percent = 40;
  json spec = GpuPodSpec(3);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  PlanContext context{s, policy, &metrics};
  context.explain = true;
  Decision d = Place(pod, context);
  EXPECT_TRUE(d.preferred.empty());
  EXPECT_TRUE(d.claims.empty());
  std::string trail;
  for (const std::string& line : d.trail) trail += line + "\n";
  EXPECT_NE(trail.find("gpu-a: cannot take it: 2 of its GPUs pass the filter (free memory >= "
                       "8000 MiB, utilisation <= 40%), 3 asked"),
            std::string::npos)
      << trail;
  EXPECT_NE(trail.find("gpu-b: cannot take it: 0 of its GPUs pass the filter"), std::string::npos)
      << trail;
  EXPECT_EQ(d.warnings, (std::vector<std::string>{
                            "gpuadmit: Pod default/p: no node has 3 nvidia.com/gpu free that the "
                            "pod may use (placement filter: free memory >= 8000 MiB, utilisation "
                            "<= 40%); no node affinity added"}));
  // Without metrics nothing is filtered.
  EXPECT_EQ(TermsOf(Place(pod, {s, policy, nullptr}).preferred), HostPreference("gpu-a"));
}

TEST(Placement, MostIdleLeavesThePodToTheSchedulerWhenNoCandidateHasAnIdleGpu) {
  json cluster = ListOf({GpuNode("gpu-a", 2), GpuNode("gpu-b", 2)});
  std::string text;
  for (const char* node : {"gpu-a", "gpu-b"}) {
    for (int g = 0; g < 2; ++g) text += DcgmGpu(node, g, 95, 14000, 1000);
  }
  InventorySnapshot s = SnapshotOf(cluster);
  ClusterGpuMetrics metrics = MetricsOf(text);
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;  // most-idle
  Decision d = Place(pod, {s, policy, &metrics});
  EXPECT_TRUE(d.preferred.empty());
  EXPECT_TRUE(d.required.empty());
  EXPECT_TRUE(d.claims.empty());
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(d.tally.Count(DecisionPoint::kPlacementNoIdle), 1u);
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "No node that can take 1 nvidia.com/gpu has an idle one: left to the "
                      "scheduler (no node affinity)"),
            d.trail.end());
  // One idle GPU anywhere is enough to choose its node; other strategies do not look at idleness.
  metrics = MetricsOf(text + DcgmGpu("gpu-a", 0, 5, 100, 14900));
  EXPECT_EQ(TermsOf(Place(pod, {s, policy, &metrics}).preferred), HostPreference("gpu-a"));
  policy.placement.strategy = PlacementStrategy::kBestFit;
  EXPECT_FALSE(Place(pod, {s, policy, &metrics}).preferred.empty());
}

TEST(Placement, AnMpsNodeAtThePolicysClientsPerGpuCannotTakeAnotherClient) {
  json cluster = ListOf({GpuNode("gpu-control", 1)});
  // The shared-node helper copies a node named gpu-small.
  json small = GpuNode("gpu-small", 2);
  cluster["items"].push_back(small);
  testing::AddSharedGpuNode(cluster, "mps-a", "mps", 2, 4);
  testing::AddSharedGpuNode(cluster, "mps-b", "mps", 2, 4);
  AddBoundPods(cluster, "mps-a", "nvidia.com/gpu.shared", 2);
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = {{"containers",
                {{{"name", "main"},
                  {"resources", {{"limits", {{"nvidia.com/gpu.shared", "1"}}}}}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kBestFit;
  // Best-fit packs: mps-a has 6 replicas free, mps-b 8.
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("mps-a"));
  // One client a GPU: mps-a's 2 GPUs are taken.
  policy.sharing.mps_max_clients = 1;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("mps-b"));
}

TEST(Placement, IdleThresholdsComeFromThePolicy) {
  json cluster = ListOf({GpuNode("gpu-a", 8), GpuNode("gpu-b", 8)});
  std::string text;
  for (int g = 0; g < 8; ++g) text += DcgmGpu("gpu-a", g, 25, 6750, 8250);  // 25 %, 45 % memory
  for (int g = 0; g < 4; ++g) text += DcgmGpu("gpu-b", g, 5, 0, 15000);
  for (int g = 4; g < 8; ++g) text += DcgmGpu("gpu-b", g, 60, 0, 15000);
  InventorySnapshot s = SnapshotOf(cluster);
  ClusterGpuMetrics metrics = MetricsOf(text);
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  struct Case {
    double max_utilization;
    double max_memory;
    std::string node;
  } cases[] = {
      {30, 50, "gpu-a"},  // seed 000's: all 8 of gpu-a idle, 4 of gpu-b
      {20, 50, "gpu-b"},  // gpu-a's 25 % is busy now
      {30, 40, "gpu-b"},  // gpu-a's 45 % memory is busy now
  };
  for (const Case& c : cases) {
    Policy policy;
    policy.placement.idle_max_utilization_percent = c.max_utilization;
    policy.placement.idle_max_memory_percent = c.max_memory;
    Decision d = Place(pod, {s, policy, &metrics});
    EXPECT_EQ(TermsOf(d.preferred), HostPreference(c.node))
        << c.max_utilization << " " << c.max_memory;
  }
}

TEST(Placement, ANodeWithoutMetricsCountsEveryGpuIdle) {
  json cluster = ListOf({GpuNode("gpu-a", 8), GpuNode("gpu-b", 8)});
  std::string text;
  for (int g = 0; g < 8; ++g) text += DcgmGpu("gpu-a", g, 50, 100, 14900);
  InventorySnapshot s = SnapshotOf(cluster);
  ClusterGpuMetrics metrics = MetricsOf(text);
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Decision d = Place(pod, {s, Policy{}, &metrics});
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-b"));
}

TEST(Placement, AtEqualIdleCountsTheLowerMeanUtilisationWins) {
  json cluster = ListOf({GpuNode("gpu-a", 2), GpuNode("gpu-b", 2)});
  std::string text = DcgmGpu("gpu-a", 0, 20, 0, 15000) + DcgmGpu("gpu-a", 1, 20, 0, 15000) +
                     DcgmGpu("gpu-b", 0, 10, 0, 15000) + DcgmGpu("gpu-b", 1, 10, 0, 15000);
  InventorySnapshot s = SnapshotOf(cluster);
  ClusterGpuMetrics metrics = MetricsOf(text);
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  EXPECT_EQ(TermsOf(Place(pod, {s, Policy{}, &metrics}).preferred), HostPreference("gpu-b"));
}

TEST(Placement, TiesGoToTheFirstNodeByNameUnderEveryStrategy) {
  json cluster = ListOf({GpuNode("gpu-c", 4), GpuNode("gpu-a", 4), GpuNode("gpu-b", 4)});
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  for (PlacementStrategy strategy :
       {PlacementStrategy::kMostIdle, PlacementStrategy::kBestFit, PlacementStrategy::kFirstFit,
        PlacementStrategy::kWorstFit, PlacementStrategy::kScore}) {
    Policy policy;
    policy.placement.strategy = strategy;
    EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("gpu-a"))
        << StrategyName(strategy);
  }
}

TEST(Placement, RequiredAffinityPinsWithARequirementInsteadOfAPreference) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;
  policy.placement.affinity = AffinityMode::kRequired;
  Decision d = Place(pod, {s, policy});
  EXPECT_TRUE(d.preferred.empty());
  ASSERT_EQ(d.required.size(), 1u);
  EXPECT_EQ(TermsOf({{0, d.required}}), HostPreference("gpu-03", 0));
  EXPECT_EQ(d.claims, (std::vector<Claim>{{"gpu-03", kGpu, 2, 8}}));
}

// Reservations a test holds by hand; single-threaded.
class HeldReservations final : public Reservations {
 public:
  void Hold(Claim claim) { held_.push_back(std::move(claim)); }
  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view) const override {
    int64_t n = 0;
    for (const Claim& c : held_) n += c.node == node && c.resource == resource ? c.count : 0;
    return n;
  }
  bool Holds(std::string_view, std::string_view) const override { return false; }
  bool Commit(const std::string&, const std::string&, const std::vector<Claim>&) override {
    return false;
  }

 private:
  std::vector<Claim> held_;
};

TEST(Placement, ARequiredPinReservesTheCpuAndMemoryItCountsOn) {
  // A pinned pod can run nowhere else, so its cpu and memory are claimed with its GPUs; a
  // decision that sees another admission's claim on gpu-03's cpu ranks gpu-03 without it.
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = GpuPodSpec(2);
  spec["containers"][0]["resources"]["requests"] = {{"cpu", "20"}, {"memory", "1Gi"}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;
  policy.placement.affinity = AffinityMode::kRequired;
  Decision d = Place(pod, {s, policy});
  EXPECT_EQ(TermsOf({{0, d.required}}), HostPreference("gpu-03", 0));
  const int64_t cpu_free = s.FindNode("gpu-03")->ComputeFree().cpu_milli;
  const int64_t memory_free = s.FindNode("gpu-03")->ComputeFree().memory_bytes;
  EXPECT_EQ(d.claims, (std::vector<Claim>{{"gpu-03", kGpu, 2, 8},
                                          {"gpu-03", "cpu", 20000, cpu_free},
                                          {"gpu-03", "memory", 1LL << 30, memory_free}}));
  HeldReservations held;
  held.Hold({"gpu-03", "cpu", 20000, cpu_free});
  PlanContext context{s, policy, nullptr, &held};
  Decision next = Place(pod, context);
  EXPECT_EQ(TermsOf({{0, next.required}}), HostPreference("gpu-04", 0));
  // A preferred choice reserves devices only.
  policy.placement.affinity = AffinityMode::kPreferred;
  EXPECT_EQ(Place(pod, {s, policy}).claims, (std::vector<Claim>{{"gpu-03", kGpu, 2, 8}}));
}

TEST(Placement, ThePreferenceWeightComesFromThePolicy) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;
  policy.placement.preferred_weight = 30;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("gpu-03", 30));
}

TEST(Placement, OnlyNodesThePodMayRunOnAreCandidates) {
  json cluster = StrategyCluster();
  cluster["items"][2]["metadata"]["labels"]["pool"] = "other";  // gpu-03
  InventorySnapshot s = SnapshotOf(cluster);
  // gpu-03 is left out by the selector, gpu-04 by the required affinity.
  json spec = GpuPodSpec(2, json::parse(R"({"nodeSelector": {"kubernetes.io/os": "linux"},
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
      "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-04"]},
        {"key": "pool", "operator": "DoesNotExist"}]}]}}}})"));
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  EXPECT_EQ(TermsOf(Place(pod, {s, Policy{}}).preferred), HostPreference("gpu-02"));
}

TEST(Placement, WhatEarlierStagesAddToThePodNarrowsTheCandidatesToo) {
  json cluster = StrategyCluster();
  cluster["items"][4]["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "mps";  // gpu-05
  cluster["items"][5]["metadata"]["labels"]["zone"] = "b";                               // gpu-06
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  PlanState state{pod.needs.containers, pod.needs.effective};
  Decision selected;
  selected.node_selector = {{"nvidia.com/gpu.sharing-strategy", "mps"}};
  PlanPlacement(pod, {s, Policy{}}, state, selected);
  EXPECT_EQ(TermsOf(selected.preferred), HostPreference("gpu-05"));
  Decision required;
  required.required = {{"zone", "In", {"b"}, false}};
  PlanPlacement(pod, {s, Policy{}}, state, required);
  EXPECT_EQ(TermsOf(required.preferred), HostPreference("gpu-06"));
}

TEST(Placement, NoNodeThatCanTakeThePodMeansNoAffinityAndAWarning) {
  json cluster = StrategyCluster();
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(9);
  PodRequest pod = PodRequest::From("default", "Pod default/big", spec, nullptr, true);
  Decision d = Place(pod, {s, Policy{}});
  EXPECT_TRUE(d.preferred.empty());
  EXPECT_TRUE(d.required.empty());
  EXPECT_TRUE(d.claims.empty());
  EXPECT_EQ(d.warnings, (std::vector<std::string>{
                            "gpuadmit: Pod default/big: no node has 9 nvidia.com/gpu free that "
                            "the pod may use; no node affinity added"}));
  // An earlier stage that warned has said it already: one warning per problem.
  PlanState state{pod.needs.containers, pod.needs.effective};
  Decision warned;
  warned.warnings = {"nvidia.com/gpu: free on no node"};
  PlanPlacement(pod, {s, Policy{}}, state, warned);
  EXPECT_EQ(warned.warnings, (std::vector<std::string>{"nvidia.com/gpu: free on no node"}));
}

TEST(Placement, ReservationsOfOtherAdmissionsCountAsTaken) {
  json cluster = ListOf({GpuNode("gpu-a", 2), GpuNode("gpu-b", 1)});
  InventorySnapshot s = SnapshotOf(cluster);
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations view(ledger);
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  std::vector<std::string> chosen;
  for (int i = 0; i < 4; ++i) {
    std::string key = "uid-" + std::to_string(i);
    Decision d = Place(pod, {s, Policy{}, nullptr, &view, key});
    if (d.claims.empty() || !view.Commit(key, "default/p" + key, d.claims)) {
      chosen.push_back("-");
      continue;
    }
    chosen.push_back(d.claims[0].node);
  }
  EXPECT_EQ(chosen, (std::vector<std::string>{"gpu-a", "gpu-a", "gpu-b", "-"}));
}

TEST(Placement, AMigPodIsCountedOnTheNodeItIsSteeredTo) {
  // Demo cluster: 1g.10gb has 22 free on gpu-small, 3 on gpu-medium. The MIG stage counted
  // the pod on the most free; best-fit steers it to gpu-medium, and the claim follows.
  InventorySnapshot s = SnapshotOf(testing::DemoCluster());
  json spec = {{"containers",
                {{{"name", "m"}, {"resources", {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}}}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/m", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kBestFit;
  PlanState state{pod.needs.containers, pod.needs.effective};
  Decision d;
  d.claims.push_back({"gpu-small", "nvidia.com/mig-1g.10gb", 1, 22});
  PlanPlacement(pod, {s, policy}, state, d);
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-medium"));
  EXPECT_EQ(d.claims, (std::vector<Claim>{{"gpu-medium", "nvidia.com/mig-1g.10gb", 1, 3}}));
}

TEST(Placement, TemplatesAreNeverPinnedToANode) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = GpuPodSpec(2);
  PodRequest deployment = PodRequest::From("default", "Deployment default/web", spec);
  Decision d = Place(deployment, {s, Policy{}});
  EXPECT_TRUE(d.preferred.empty());
  EXPECT_TRUE(d.required.empty());
  EXPECT_TRUE(d.claims.empty());
  EXPECT_TRUE(d.warnings.empty());
}

TEST(Placement, PodsThatAskForNoGpuAreLeftAlone) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/web", spec, nullptr, true);
  Policy policy;
  policy.worker_defaults.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"}};
  policy.worker_defaults.shm_size = "2Gi";
  Decision d = Place(pod, {s, policy});
  EXPECT_FALSE(d.Changes());
  EXPECT_TRUE(d.trail.empty());
}

Policy Seed004Policy() {
  Policy policy;
  policy.placement.gpu_types = {{"A100", 100}, {"V100", 50}, {"H100", 10}};
  policy.worker_defaults.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"}};
  policy.worker_defaults.shm_size = "2Gi";
  return policy;
}

json Seed004Cluster() {
  json a100 = GpuNode("gpu-a100", 8, "NVIDIA-A100-SXM4-40GB");
  a100["spec"]["taints"] = {
      {{"key", "nvidia.com/gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}};
  return ListOf({a100, GpuNode("gpu-v100", 4, "Tesla-V100-SXM2-16GB"),
                 GpuNode("gpu-v100s", 4, "Tesla-V100S-PCIE-32GB")});
}

TEST(Placement, GpuTypesBecomeWeightedProductPreferencesForPodsAndTemplates) {
  InventorySnapshot s = SnapshotOf(Seed004Cluster());
  Policy policy = Seed004Policy();
  json spec = GpuPodSpec(1);
  json want = json::parse(R"([
    {"weight": 100, "expressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                     "values": ["NVIDIA-A100-SXM4-40GB"]}]},
    {"weight": 50, "expressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                    "values": ["Tesla-V100-SXM2-16GB", "Tesla-V100S-PCIE-32GB"]}]}
  ])");
  Decision for_template = Place(PodRequest::From("default", "Job default/j", spec), {s, policy});
  EXPECT_EQ(TermsOf(for_template.preferred), want);
  // A Pod gets them too, then its node. The added toleration makes the tainted A100 node a
  // candidate, and the most free.
  Decision for_pod =
      Place(PodRequest::From("default", "Pod default/p", spec, nullptr, true), {s, policy});
  want.push_back(HostPreference("gpu-a100")[0]);
  EXPECT_EQ(TermsOf(for_pod.preferred), want);
}

TEST(Placement, GpuTypesAlsoMatchTheAcceleratorLabelOfNodesWithoutAProductLabel) {
  auto by_hand = [](const std::string& name, const std::string& accelerator) {
    json node = GpuNode(name, 4);
    node["metadata"]["labels"].erase("nvidia.com/gpu.product");
    node["metadata"]["labels"]["accelerator"] = accelerator;
    return node;
  };
  // GFD labels one A100 node; two nodes are labelled by hand, as `kubectl label nodes` does.
  json gfd = GpuNode("gpu-gfd", 8, "NVIDIA-A100-SXM4-40GB");
  gfd["metadata"]["labels"]["accelerator"] = "nvidia-tesla-a100";  // both: counted once
  InventorySnapshot s = SnapshotOf(
      ListOf({gfd, by_hand("gpu-a", "nvidia-tesla-a100"), by_hand("gpu-v", "nvidia-tesla-v100")}));
  Policy policy;
  policy.placement.gpu_types = {{"A100", 100}, {"V100", 50}};
  json spec = GpuPodSpec(1);
  Decision d = Place(PodRequest::From("default", "Job default/j", spec), {s, policy});
  EXPECT_EQ(TermsOf(d.preferred), json::parse(R"([
    {"weight": 100, "expressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                     "values": ["NVIDIA-A100-SXM4-40GB"]}]},
    {"weight": 100, "expressions": [{"key": "accelerator", "operator": "In",
                                     "values": ["nvidia-tesla-a100"]},
                                    {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist",
                                     "values": []}]},
    {"weight": 50, "expressions": [{"key": "accelerator", "operator": "In",
                                    "values": ["nvidia-tesla-v100"]},
                                   {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist",
                                    "values": []}]}
  ])"));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "GPU type V100: prefer accelerator In [nvidia-tesla-v100], weight 50"),
            d.trail.end());
}

TEST(Placement, ThePodsGpuTypeBringsItsCpuAndMemoryAndTheNodeMustHoldThem) {
  constexpr int64_t kGiMilli = (int64_t{1} << 30) * 1000;
  Policy policy;
  policy.worker_defaults.resources = {
      {"V100", {{"requests", "cpu", "4000m", 4'000}, {"requests", "memory", "8Gi", 8 * kGiMilli}}},
      {"A100", {{"requests", "cpu", "8000m", 8'000}, {"limits", "memory", "32Gi", 32 * kGiMilli}}}};
  // An A100 node with 6 cpus: room for a V100-sized pod's 4, not an A100-sized one's 8.
  json a100_node = GpuNode("gpu-a100", 2, "NVIDIA-A100-SXM4-40GB");
  a100_node["status"]["allocatable"]["cpu"] = "6";
  json v100_node = GpuNode("gpu-v100", 2);
  v100_node["metadata"]["labels"].erase("nvidia.com/gpu.product");
  v100_node["metadata"]["labels"]["accelerator"] = "nvidia-tesla-v100";
  v100_node["status"]["allocatable"]["cpu"] = "6";
  InventorySnapshot s = SnapshotOf(ListOf({a100_node, v100_node}));
  auto selecting = [](const char* key, const char* value) {
    return GpuPodSpec(1, {{"nodeSelector", {{key, value}}}});
  };
  json v100 = selecting("accelerator", "nvidia-tesla-v100");
  Decision d =
      Place(PodRequest::From("default", "Pod default/v", v100, nullptr, true), {s, policy});
  EXPECT_EQ(d.resource_defaults, policy.worker_defaults.resources[0].defaults);
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-v100"));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "worker default: GPU type V100 (nvidia-tesla-v100): requests.cpu 4000m, "
                      "requests.memory 8Gi where a GPU container sets none"),
            d.trail.end());
  json a100 = selecting("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB");
  d = Place(PodRequest::From("default", "Pod default/a", a100, nullptr, true), {s, policy});
  EXPECT_EQ(d.resource_defaults, policy.worker_defaults.resources[1].defaults);
  EXPECT_TRUE(d.preferred.empty()) << "8 cpus do not fit the 6-cpu node";
  policy.worker_defaults.resources[1].defaults[0] = {"requests", "cpu", "6", 6'000};
  d = Place(PodRequest::From("default", "Pod default/a", a100, nullptr, true), {s, policy});
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-a100"));
  // A pod that names no GPU type, or one no entry matches, gets none.
  json plain = GpuPodSpec(1);
  EXPECT_TRUE(Place(PodRequest::From("default", "Pod default/p", plain, nullptr, true), {s, policy})
                  .resource_defaults.empty());
  json t4 = selecting("accelerator", "nvidia-tesla-t4");
  EXPECT_TRUE(Place(PodRequest::From("default", "Job default/j", t4), {s, policy})
                  .resource_defaults.empty());
}

TEST(Placement, WorkerTolerationsAreAddedOnlyWhereNoneCoversThem) {
  InventorySnapshot s = SnapshotOf(Seed004Cluster());
  Policy policy = Seed004Policy();
  struct Case {
    std::string tolerations;
    bool added;
  } cases[] = {
      {R"([])", true},
      {R"([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}])",
       false},
      {R"([{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])", false},
      {R"([{"key": "nvidia.com/gpu", "operator": "Exists"}])", false},
      {R"([{"operator": "Exists"}])", false},
      {R"([{"operator": "Exists", "effect": "NoSchedule"}])", false},
      {R"([{"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}])", true},
      {R"([{"key": "nvidia.com/gpu", "value": "yes", "effect": "NoSchedule"}])", true},
      {R"([{"key": "other", "operator": "Exists"}])", true},
  };
  for (const Case& c : cases) {
    json spec = GpuPodSpec(1, {{"tolerations", json::parse(c.tolerations)}});
    Decision d =
        Place(PodRequest::From("default", "Pod default/p", spec, nullptr, true), {s, policy});
    EXPECT_EQ(d.tolerations.size(), c.added ? 1u : 0u) << c.tolerations;
  }
}

TEST(Placement, ShmIsAskedOnlyWhenAGpuContainerLacksOne) {
  InventorySnapshot s = SnapshotOf(Seed004Cluster());
  Policy policy = Seed004Policy();
  json bare = GpuPodSpec(1);
  json mounted = bare;
  mounted["containers"][0]["volumeMounts"] = {{{"name", "shm"}, {"mountPath", "/dev/shm"}}};
  json sidecar_mounted = mounted;  // the GPU-less sidecar's mount does not count
  sidecar_mounted["containers"][0].erase("volumeMounts");
  sidecar_mounted["containers"].push_back(
      {{"name", "log"}, {"volumeMounts", {{{"name", "shm"}, {"mountPath", "/dev/shm"}}}}});
  EXPECT_EQ(Place(PodRequest::From("d", "Pod d/p", bare, nullptr, true), {s, policy}).shm_size,
            "2Gi");
  EXPECT_EQ(Place(PodRequest::From("d", "Pod d/p", mounted, nullptr, true), {s, policy}).shm_size,
            "");
  EXPECT_EQ(
      Place(PodRequest::From("d", "Pod d/p", sidecar_mounted, nullptr, true), {s, policy}).shm_size,
      "2Gi");
}

TEST(Placement, OptOutsKeepTheWorkerDefaultsAndSkipWhatTheyTurnOff) {
  InventorySnapshot s = SnapshotOf(Seed004Cluster());
  json spec = GpuPodSpec(1);
  json off = {{"annotations", {{"gpuadmit.io/node-selection", "false"}}}};
  json alias_off = {{"labels", {{"gpu-autoscaler.io/node-selection", "false"}}}};
  struct Case {
    std::string name;
    const json* metadata;
    bool opted_out;
    bool placement_enabled;
    size_t preferred;  // GPU types (2) and hostname (1)
  } cases[] = {
      {"default", nullptr, false, true, 3},
      {"node-selection annotation", &off, false, true, 2},
      {"node-selection label alias", &alias_off, false, true, 2},
      {"optimize false", nullptr, true, true, 0},
      {"placement disabled", nullptr, false, false, 0},
  };
  for (const Case& c : cases) {
    Policy policy = Seed004Policy();
    policy.placement.enabled = c.placement_enabled;
    Decision d =
        Place(PodRequest::From("d", "Pod d/p", spec, c.metadata, true), {s, policy}, c.opted_out);
    EXPECT_EQ(d.preferred.size(), c.preferred) << c.name;
    EXPECT_EQ(d.claims.size(), c.preferred == 3 ? 1u : 0u) << c.name;
    EXPECT_EQ(d.tolerations.size(), 1u) << c.name;
    EXPECT_EQ(d.shm_size, "2Gi") << c.name;
  }
}

TEST(Placement, APodsEarlierHostnameChoiceIsKeptWhileItStillFits) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  // gpu-05 would not be chosen (most-idle picks gpu-03), but the pod already prefers it.
  json spec = GpuPodSpec(2, json::parse(R"({"affinity": {"nodeAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
      "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                            "values": ["gpu-05"]}]}}]}}})"));
  PodRequest pod = PodRequest::From("d", "Pod d/p", spec, nullptr, true);
  EXPECT_EQ(TermsOf(Place(pod, {s, Policy{}}).preferred), HostPreference("gpu-05"));
  // gpu-01 has too few free: a new choice.
  spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
      ["preference"]["matchExpressions"][0]["values"][0] = "gpu-01";
  PodRequest moved = PodRequest::From("d", "Pod d/p", spec, nullptr, true);
  EXPECT_EQ(TermsOf(Place(moved, {s, Policy{}}).preferred), HostPreference("gpu-03"));
}

TEST(Placement, ABoundPodIsNotSteered) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  json spec = GpuPodSpec(2, {{"nodeName", "gpu-05"}});
  Decision d = Place(PodRequest::From("d", "Pod d/p", spec, nullptr, true), {s, Policy{}});
  EXPECT_TRUE(d.preferred.empty());
  EXPECT_TRUE(d.claims.empty());
}

TEST(Placement, TheExplainedTrailIsSeedZerosNodeSelectionBlock) {
  InventorySnapshot s = SnapshotOf(StrategyCluster());
  ClusterGpuMetrics metrics = MetricsOf(StrategyMetrics());
  json spec = GpuPodSpec(2);
  PodRequest pod = PodRequest::From("default", "Pod default/train", spec, nullptr, true);
  Policy policy;
  PlanContext context{s, policy, &metrics};
  context.explain = true;
  EXPECT_EQ(Place(pod, context).trail,
            (std::vector<std::string>{
                "=== GPU Node Selection ===",
                "Looking for a node with 2 idle nvidia.com/gpu (most-idle, preferred affinity)...",
                "  gpu-03: 8/8 free, idle 0, avg util 90.0%, avg mem 73.3% (ranked lower)",
                "  gpu-04: 4/8 free, idle 4, avg util 42.5%, avg mem 33.8%",
                "  4 more nodes offer nvidia.com/gpu, not examined: none could rank higher or fit",
                "Selected node 'gpu-04': 4/8 free, idle 4, avg util 42.5%, avg mem 33.8%",
                "  affinity kubernetes.io/hostname In [gpu-04], preferred, weight 100",
                "  counts on 2 nvidia.com/gpu of gpu-04", "=========================="}));
  context.explain = false;
  EXPECT_EQ(Place(pod, context).trail,
            (std::vector<std::string>{
                "placement (most-idle): gpu-04 for 2 nvidia.com/gpu, 2 of 6 nodes weighed; "
                "kubernetes.io/hostname In [gpu-04], preferred, weight 100"}));
}

TEST(Placement, NodesThatCannotTakeThePodSayWhyWhenExplained) {
  json cluster =
      ListOf({GpuNode("gpu-a", 4), GpuNode("gpu-b", 4), GpuNode("gpu-c", 4), GpuNode("gpu-d", 4)});
  cluster["items"][0]["spec"]["unschedulable"] = true;
  cluster["items"][1]["spec"]["taints"] = {{{"key", "dedicated"}, {"effect", "NoSchedule"}}};
  for (int i : {0, 1, 3}) cluster["items"][i]["metadata"]["labels"]["pool"] = "b";
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(1, {{"nodeSelector", {{"pool", "b"}}}});
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, nullptr, true);
  Policy policy;
  PlanContext context{s, policy};
  context.explain = true;
  std::vector<std::string> trail = Place(pod, context).trail;
  ASSERT_GE(trail.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(trail.begin() + 2, trail.begin() + 6),
            (std::vector<std::string>{"  gpu-a: cannot take it: cordoned",
                                      "  gpu-b: cannot take it: taint dedicated:NoSchedule "
                                      "not tolerated",
                                      "  gpu-c: cannot take it: nodeSelector pool differs",
                                      "  gpu-d: 4/4 free, idle 4, no metrics"}));
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

// A bound pod on `node` asking `cpu` (and no GPU): what takes a GPU node's CPU in the trace.
void AddCpuPod(json& cluster, const std::string& node, const std::string& name,
               const std::string& cpu) {
  cluster["items"].push_back(
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata", {{"name", name}, {"namespace", "default"}}},
       {"spec",
        {{"nodeName", node},
         {"containers", {{{"name", "main"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}},
       {"status", {{"phase", "Running"}}}});
}

TEST(Placement, ANodeWithoutThePodsCpuLeftIsNoCandidate) {
  // Best-fit would pick gpu-05 (2 free GPUs); a CPU-only pod holds 31 of its 32 CPUs, so a pod
  // asking 2 CPUs could not run there and the scheduler would bind it elsewhere.
  json cluster = StrategyCluster();
  AddCpuPod(cluster, "gpu-05", "cpu-hog", "31");
  InventorySnapshot s = SnapshotOf(cluster);
  EXPECT_EQ(s.FindNode("gpu-05")->compute_used.cpu_milli, 31000);
  json spec = GpuPodSpec(2);
  spec["containers"][0]["resources"]["requests"] = {{"cpu", "2"}};
  PodRequest pod = PodRequest::From("default", "Pod default/train", spec, nullptr, true);
  EXPECT_EQ(pod.needs.compute.cpu_milli, 2000);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kBestFit;
  PlanContext context{s, policy};
  context.explain = true;
  Decision d = Place(pod, context);
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-06"));  // the next least free
  std::string trail;
  for (const std::string& line : d.trail) trail += line + "\n";
  EXPECT_NE(trail.find("gpu-05"), std::string::npos) << trail;
  EXPECT_NE(trail.find("too little cpu or memory free (1000m cpu"), std::string::npos) << trail;
}

TEST(Placement, FragmentationKeepsWholeNodesForTheMixsLargePods) {
  // Two 8-GPU nodes, one with 4 GPUs taken by a 4-GPU pod, one with 1 taken, and a mix of
  // 4-GPU pods: a 1-GPU pod on big-b (7 free -> 6) leaves room for one 4-GPU pod there, as
  // before; on big-a (4 free -> 3) it strands all three. Best-fit takes big-a; fragmentation
  // big-b.
  json cluster = ListOf({GpuNode("big-a", 8), GpuNode("big-b", 8)});
  AddBoundPods(cluster, "big-b", kGpu, 1);
  for (int i = 0; i < 1; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "four-" + std::to_string(i)}, {"namespace", "default"}}},
                {"spec", GpuPodSpec(4, {{"nodeName", "big-a"}})},
                {"status", {{"phase", "Running"}}}};
    cluster["items"].push_back(pod);
  }
  InventorySnapshot s = SnapshotOf(cluster);
  ASSERT_EQ(s.mix().size(), 2u);  // a 4-GPU shape and a 1-GPU one, one pod each
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/small", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kBestFit;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("big-a"));
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("big-b"));
}

TEST(Placement, FragmentationWithoutAMixIsBestFit) {
  InventorySnapshot s = SnapshotOf(ListOf({GpuNode("gpu-a", 8), GpuNode("gpu-b", 2)}));
  ASSERT_TRUE(s.mix().empty());
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/small", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("gpu-b"));
}

// A bound pod `name` on `node` asking one GPU of a pod that may run only on `product`.
void AddProductPod(json& cluster, const std::string& node, const std::string& name,
                   const std::string& product) {
  cluster["items"].push_back(
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata", {{"name", name}, {"namespace", "default"}}},
       {"spec", GpuPodSpec(1, {{"nodeName", node},
                               {"nodeSelector", {{"nvidia.com/gpu.product", product}}}})},
       {"status", {{"phase", "Running"}}}});
}

// Two bound pods on `node`, each asking one GPU and `cpu`: the workload mix of a test.
void AddMixPods(json& cluster, const std::string& node, const std::string& cpu) {
  for (int i = 0; i < 2; ++i) {
    json spec = GpuPodSpec(1, {{"nodeName", node}});
    spec["containers"][0]["resources"]["requests"] = {{"cpu", cpu}};
    cluster["items"].push_back({{"apiVersion", "v1"},
                                {"kind", "Pod"},
                                {"metadata", {{"name", "mix-" + std::to_string(i)}}},
                                {"spec", spec},
                                {"status", {{"phase", "Running"}}}});
  }
}

std::string TrailOf(const Decision& d) {
  std::string trail;
  for (const std::string& line : d.trail) trail += line + "\n";
  return trail;
}

TEST(Placement, FragmentationKeepsTheGpuTypeTheMixIsConstrainedTo) {
  // The mix's pods may run only on T4s. A pod that may run anywhere strands nothing on either
  // empty node by cpu or count, but on the A100 node its GPU is one the mix could never use:
  // fragmentation puts it there and keeps the T4s, where best-fit takes the first by name.
  json cluster = ListOf({GpuNode("gpu-a-t4", 4, "Tesla-T4"), GpuNode("gpu-b-a100", 4, "NVIDIA-A100"),
                         GpuNode("gpu-c-t4", 2, "Tesla-T4")});
  AddProductPod(cluster, "gpu-c-t4", "t4-only-1", "Tesla-T4");
  AddProductPod(cluster, "gpu-c-t4", "t4-only-2", "Tesla-T4");
  InventorySnapshot s = SnapshotOf(cluster);
  ASSERT_EQ(s.mix().size(), 1u);
  EXPECT_EQ(s.mix()[0].shape.products, std::vector<std::string>{"Tesla-T4"});
  json spec = GpuPodSpec(1);
  PodRequest pod = PodRequest::From("default", "Pod default/any", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kBestFit;
  EXPECT_EQ(TermsOf(Place(pod, {s, policy}).preferred), HostPreference("gpu-a-t4"));
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  Decision d = Place(pod, {s, policy});
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-b-a100"));
  // The trail says which resource the mix could not use.
  EXPECT_NE(TrailOf(d).find("leaves 3 nvidia.com/gpu free that 100% of the workload mix could "
                            "not use (GPU type 100%)"),
            std::string::npos)
      << TrailOf(d);
}

TEST(Placement, FragmentationNamesTheCpuThatStrandsGpus) {
  // gpu-a has 2 of its 32 cpus left; the mix's pods ask 4. A 1-GPU pod asking 1 cpu on gpu-a
  // leaves its other free GPU stranded for cpu; gpu-b keeps room for the mix.
  json cluster = ListOf({GpuNode("gpu-a", 2), GpuNode("gpu-b", 4)});
  AddCpuPod(cluster, "gpu-a", "cpu-hog", "30");
  AddMixPods(cluster, "gpu-b", "4");
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(1);
  spec["containers"][0]["resources"]["requests"] = {{"cpu", "1"}};
  PodRequest pod = PodRequest::From("default", "Pod default/small", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  PlanContext context{s, policy};
  context.explain = true;
  Decision d = Place(pod, context);
  // gpu-a's 2 free GPUs are stranded for cpu; the pod takes one of them, so 1 is stranded after
  // (the score +1). gpu-b's 2 free strand nothing before or after (0). Best-fit ties them.
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-a"));
  EXPECT_NE(TrailOf(d).find("leaves 1 nvidia.com/gpu free that 100% of the workload mix could not "
                            "use (cpu 100%)"),
            std::string::npos)
      << TrailOf(d);
}

TEST(Placement, PodsWithoutGpusGoWhereTheyStrandNoGpu) {
  // gpu-full has no GPU free, gpu-free both; the mix asks 1 GPU and 8 cpus. A pod asking 16 cpus
  // and no GPU strands nothing on either now; the tie goes to the node with the fewest GPUs
  // free, so gpu-free keeps its cpus for GPU pods.
  json cluster = ListOf({GpuNode("gpu-free", 2), GpuNode("gpu-full", 2)});
  AddMixPods(cluster, "gpu-full", "8");
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = {{"containers",
                {{{"name", "web"}, {"resources", {{"requests", {{"cpu", "16"}}}}}}}}};
  PodRequest pod = PodRequest::From("default", "Pod default/web", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  Decision off = Place(pod, {s, policy});
  EXPECT_TRUE(off.preferred.empty());
  EXPECT_TRUE(off.trail.empty());
  policy.placement.pods_without_gpus = true;
  Decision d = Place(pod, {s, policy});
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-full"));
  EXPECT_TRUE(d.claims.empty());  // no device counted
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_NE(TrailOf(d).find("gpu-full for a pod without GPUs"), std::string::npos) << TrailOf(d);
  // A node offering no GPU that can take it strands nothing: the scheduler's to choose.
  json cpu_node = GpuNode("cpu-1", 0);
  cpu_node["status"]["allocatable"].erase("nvidia.com/gpu");
  cpu_node["status"]["capacity"].erase("nvidia.com/gpu");
  cluster["items"].push_back(cpu_node);
  InventorySnapshot with_cpu_node = SnapshotOf(cluster);
  Decision left = Place(pod, {with_cpu_node, policy});
  EXPECT_TRUE(left.preferred.empty());
  EXPECT_NE(TrailOf(left).find("cpu-1, which offers none, can take it: left to the scheduler"),
            std::string::npos)
      << TrailOf(left);
}

TEST(Placement, FragmentationLeavesTheGpusOfATypeInDemandToThePodsThatNeedThem) {
  // Half the mix may run only on T4s, whose only free GPUs are gpu-a-t4's two, stranded for
  // cpu (2 of its 32 left): by fragmentation alone a pod that may run anywhere goes there (2
  // stranded -> 1). But T4-only pods will want more than those two GPUs (half of the cluster's
  // 6 free), so each GPU a pod takes there is one a T4-only pod misses: the pod goes to the
  // A100s, whose free GPUs no constrained pod wants.
  json cluster = ListOf({GpuNode("gpu-a-t4", 2, "Tesla-T4"), GpuNode("gpu-b-a100", 4, "NVIDIA-A100"),
                         GpuNode("gpu-c-t4", 2, "Tesla-T4"), GpuNode("gpu-d-a100", 2, "NVIDIA-A100")});
  AddCpuPod(cluster, "gpu-a-t4", "cpu-hog", "30");
  AddMixPods(cluster, "gpu-d-a100", "4");
  for (int i = 0; i < 2; ++i) {
    json spec = GpuPodSpec(1, {{"nodeName", "gpu-c-t4"},
                               {"nodeSelector", {{"nvidia.com/gpu.product", "Tesla-T4"}}}});
    spec["containers"][0]["resources"]["requests"] = {{"cpu", "4"}};
    cluster["items"].push_back({{"apiVersion", "v1"},
                                {"kind", "Pod"},
                                {"metadata", {{"name", "t4-only-" + std::to_string(i)}}},
                                {"spec", spec},
                                {"status", {{"phase", "Running"}}}});
  }
  InventorySnapshot s = SnapshotOf(cluster);
  json spec = GpuPodSpec(1);
  spec["containers"][0]["resources"]["requests"] = {{"cpu", "1"}};
  PodRequest pod = PodRequest::From("default", "Pod default/any", spec, nullptr, true);
  Policy policy;
  policy.placement.strategy = PlacementStrategy::kFragmentation;
  Decision d = Place(pod, {s, policy});
  EXPECT_EQ(TermsOf(d.preferred), HostPreference("gpu-b-a100")) << TrailOf(d);
  // A T4-only pod itself has only the T4s: it takes gpu-a-t4, and the trail names the demand.
  json t4_spec = GpuPodSpec(1, {{"nodeSelector", {{"nvidia.com/gpu.product", "Tesla-T4"}}}});
  t4_spec["containers"][0]["resources"]["requests"] = {{"cpu", "1"}};
  PodRequest t4 = PodRequest::From("default", "Pod default/t4", t4_spec, nullptr, true);
  Decision t4_d = Place(t4, {s, policy});
  EXPECT_EQ(TermsOf(t4_d.preferred), HostPreference("gpu-a-t4"));
  EXPECT_NE(TrailOf(t4_d).find("100% of its free Tesla-T4 wanted by pods that may use only some "
                               "GPU types"),
            std::string::npos)
      << TrailOf(t4_d);
}

}  // namespace
}  // namespace gpuadmit
