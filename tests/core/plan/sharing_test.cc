// Plan stage 2, the sharing mode (seed 002), run after stage 1 as the planner runs it: the
// default flow's branches and what applying each mode decides.
#include "core/plan/sharing.h"

#include <gtest/gtest.h>

#include "tests/core/plan/sharing_test_support.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::GpuPod;
using testing::k1g;
using testing::k2g;
using testing::kGpu;
using testing::kShared;
using testing::Outcome;
using testing::Sharing;
using testing::SharingCluster;
using testing::SharingTest;
using testing::SnapshotOf;
using testing::SwapsOf;
using testing::Traced;
using testing::Typed;

TEST_F(SharingTest, DefaultFlowEachBranch) {
  struct Case {
    const char* name;
    json annotations;
    json labels;
    std::string swaps;  // "" for none
    SharingMode mode;
    std::string trail;
  } cases[] = {
      {"training is exclusive even when small",
       {{"gpuadmit.io/gpu-memory", "8000"}},
       Typed("training"),
       "",
       SharingMode::kExclusive,
       "sharing: exclusive (default flow: training)"},
      {"one small GPU: the smallest MIG profile that fits",
       {{"gpuadmit.io/gpu-memory", "8000"}},
       json::object(),
       "nvidia.com/gpu->nvidia.com/mig-1g.10gb",
       SharingMode::kMig,
       "sharing: mig (default flow: one GPU, 8000 MiB < 20480 MiB)"},
      {"12000 MiB does not fit 1g.10gb",
       {{"gpuadmit.io/gpu-memory", "12000"}},
       json::object(),
       "nvidia.com/gpu->nvidia.com/mig-2g.20gb",
       SharingMode::kMig,
       "  smallest free MIG profile with at least 12000 MiB: nvidia.com/mig-2g.20gb"},
      {"MIG comes before inference",
       {{"gpuadmit.io/gpu-memory", "8000"}},
       Typed("inference"),
       "nvidia.com/gpu->nvidia.com/mig-1g.10gb",
       SharingMode::kMig,
       "sharing: mig (default flow: one GPU, 8000 MiB < 20480 MiB)"},
      {"20 GiB is not under 20 GiB",
       {{"gpuadmit.io/gpu-memory", "20Gi"}},
       json::object(),
       "",
       SharingMode::kExclusive,
       "sharing: exclusive (default flow: nothing else applies)"},
      {"inference: MPS", json::object(), Typed("inference"),
       "nvidia.com/gpu->nvidia.com/gpu.shared", SharingMode::kMps,
       "sharing: mps (default flow: inference)"},
      {"serving: MPS", json::object(), Typed("Serving"), "nvidia.com/gpu->nvidia.com/gpu.shared",
       SharingMode::kMps, "sharing: mps (default flow: serving)"},
      {"development: time-slicing", Typed("development"), json::object(),
       "nvidia.com/gpu->nvidia.com/gpu.shared", SharingMode::kTimeSlicing,
       "sharing: time-slicing (default flow: development)"},
      {"batch: time-slicing",
       json::object(),
       {{"gpuadmit.io/workload-type", "batch"}},
       "nvidia.com/gpu->nvidia.com/gpu.shared",
       SharingMode::kTimeSlicing,
       "sharing: time-slicing (default flow: batch)"},
      {"nothing declared: exclusive", json::object(), json::object(), "", SharingMode::kExclusive,
       "sharing: exclusive (default flow: nothing else applies)"},
      {"two GPUs are not MIG candidates",
       {{"gpuadmit.io/gpu-memory", "8000"}, {"gpuadmit.io/tp-size", "2"}},
       json::object(),
       "",
       SharingMode::kExclusive,
       "sharing: exclusive (default flow: nothing else applies)"},
  };
  Policy policy;
  policy.requirements.gpu_count = GpuCountAction::kCorrect;
  for (const Case& c : cases) {
    Outcome o = Sharing(GpuPod(c.annotations, c.labels), snapshot_, policy);
    EXPECT_EQ(SwapsOf(o.d), c.swaps) << c.name;
    EXPECT_EQ(o.state.mode, c.mode) << c.name;
    EXPECT_TRUE(Traced(o.d, c.trail)) << c.name << "\n" << ::testing::PrintToString(o.d.trail);
  }
}

TEST_F(SharingTest, ABranchWhoseModeThePolicyDisablesIsSkipped) {
  Policy policy;
  policy.sharing.enable_mig = false;
  policy.sharing.enable_time_slicing = false;
  Outcome small =
      Sharing(GpuPod({{"gpuadmit.io/gpu-memory", "8000"}}, Typed("inference")), snapshot_, policy);
  EXPECT_EQ(small.state.mode, SharingMode::kMps);
  Outcome dev = Sharing(GpuPod(json::object(), Typed("development")), snapshot_, policy);
  EXPECT_FALSE(dev.d.Changes());
  EXPECT_TRUE(Traced(dev.d,
                     "  default flow: development would use time-slicing, but the policy "
                     "disables time-slicing"));
  EXPECT_TRUE(Traced(dev.d, "sharing: exclusive (default flow: nothing else applies)"));
}

TEST_F(SharingTest, MigRecordsTheClaimTheModeAndTheOriginalRequest) {
  Outcome o = Sharing(GpuPod({{"gpuadmit.io/gpu-memory", "8000"}}), snapshot_);
  // gpu-small has 22 of 28 1g.10gb free, gpu-medium 3 of 4: most free first.
  EXPECT_EQ(o.d.claims, (std::vector<Claim>{{"gpu-small", k1g, 1, 22}}));
  EXPECT_EQ(o.d.annotations, (std::vector<std::pair<std::string, std::string>>{
                                 {"gpuadmit.io/applied-sharing-mode", "mig"},
                                 {"gpuadmit.io/original-request", "nvidia.com/gpu=1"}}));
  EXPECT_EQ(o.state.effective(), (ResourceList{{k1g, 1}}));
  EXPECT_EQ(o.d.warnings, std::vector<std::string>{
                              "gpuadmit: Pod default/p shares a GPU (mig, default flow: one GPU, "
                              "8000 MiB < 20480 MiB): nvidia.com/gpu -> nvidia.com/mig-1g.10gb"});
  EXPECT_TRUE(o.d.node_selector.empty());
}

TEST_F(SharingTest, MpsSteersToAnMpsNodeWithANodeSelector) {
  Outcome o = Sharing(GpuPod(json::object(), Typed("inference")), snapshot_);
  EXPECT_EQ(o.d.node_selector, (StringMap{{"nvidia.com/gpu.sharing-strategy", "mps"}}));
  EXPECT_EQ(o.d.claims, (std::vector<Claim>{{"gpu-mps", kShared, 1, 8}}));
  EXPECT_EQ(o.state.effective(), (ResourceList{{kShared, 1}}));
  EXPECT_EQ(o.d.annotations[0],
            std::make_pair(std::string("gpuadmit.io/applied-sharing-mode"), std::string("mps")));
}

TEST_F(SharingTest, MpsKeepsWithinThePolicysClientsPerGpu) {
  // gpu-mps: 2 GPUs x 4 MPS replicas. At most 2 clients a GPU, 4 pods fill it.
  Policy policy;
  policy.sharing.mps_max_clients = 2;
  json cluster = SharingCluster();
  AddBoundPods(cluster, "gpu-mps", kShared, 3);
  Outcome o = Sharing(GpuPod(json::object(), Typed("inference")), SnapshotOf(cluster), policy);
  // Its claim bounds the reservations by the cap: 1 replica left of 4, not 5 of 8.
  EXPECT_EQ(o.d.claims, (std::vector<Claim>{{"gpu-mps", kShared, 1, 1}}));
  AddBoundPods(cluster, "gpu-mps", kShared, 1);
  o = Sharing(GpuPod(json::object(), Typed("inference")), SnapshotOf(cluster), policy);
  EXPECT_TRUE(o.d.swaps.empty());
  EXPECT_TRUE(Traced(o.d,
                     "  mps not applied: no node labelled nvidia.com/gpu.sharing-strategy=mps "
                     "has nvidia.com/gpu.shared free for this pod within 2 MPS clients per GPU"));
  // Without the cap the device plugin's 4 a GPU hold.
  EXPECT_EQ(Sharing(GpuPod(json::object(), Typed("inference")), SnapshotOf(cluster)).d.claims,
            (std::vector<Claim>{{"gpu-mps", kShared, 1, 4}}));
}

TEST_F(SharingTest, TimeSlicingSteersToATimeSlicingNode) {
  Outcome o = Sharing(GpuPod(json::object(), Typed("development")), snapshot_);
  EXPECT_EQ(o.d.node_selector, (StringMap{{"nvidia.com/gpu.sharing-strategy", "time-slicing"}}));
  EXPECT_EQ(o.d.claims, (std::vector<Claim>{{"gpu-ts", kShared, 1, 8}}));
}

TEST_F(SharingTest, AnMpsNodeMustSayItIsMpsCapable) {
  json cluster = SharingCluster();
  for (json& item : cluster["items"]) {
    if (item["metadata"]["name"] == "gpu-mps") {
      item["metadata"]["labels"]["nvidia.com/mps.capable"] = "false";
    }
  }
  Outcome o = Sharing(GpuPod(json::object(), Typed("inference")), SnapshotOf(cluster));
  EXPECT_TRUE(o.d.swaps.empty());
  EXPECT_EQ(o.d.warnings.size(), 0u);  // no MPS node left in the cluster: not worth a warning
  EXPECT_TRUE(Traced(o.d,
                     "  mps not applied: no node labelled nvidia.com/gpu.sharing-strategy=mps "
                     "has nvidia.com/gpu.shared free for this pod"));
}

TEST_F(SharingTest, NoFreeMigProfileFallsThroughToTheNextBranch) {
  json cluster = SharingCluster();
  AddBoundPods(cluster, "gpu-small", k1g, 22);
  AddBoundPods(cluster, "gpu-medium", k1g, 3);
  AddBoundPods(cluster, "gpu-medium", k2g, 7);
  Outcome o = Sharing(GpuPod({{"gpuadmit.io/gpu-memory", "8000"}}, Typed("inference")),
                      SnapshotOf(cluster));
  EXPECT_EQ(SwapsOf(o.d), "nvidia.com/gpu->nvidia.com/gpu.shared");
  EXPECT_TRUE(Traced(o.d,
                     "  default flow: no MIG profile with at least 8000 MiB free on a node "
                     "this pod may use"));
}

TEST_F(SharingTest, AnUnknownMemoryNeedNeverPicksMigByDefault) {
  // A plain one-GPU pod with nothing declared is not rewritten: its need could be the whole GPU.
  Outcome o = Sharing(GpuPod(), snapshot_);
  EXPECT_TRUE(o.d.swaps.empty());
  EXPECT_TRUE(o.d.warnings.empty());
  EXPECT_FALSE(o.d.Changes());
}

TEST_F(SharingTest, TheDefaultFlowCanBeTurnedOff) {
  Policy policy;
  policy.sharing.default_flow = false;
  Outcome o = Sharing(GpuPod(json::object(), Typed("inference")), snapshot_, policy);
  EXPECT_FALSE(o.d.Changes());
  EXPECT_TRUE(o.d.trail.empty()) << ::testing::PrintToString(o.d.trail);
}

TEST_F(SharingTest, SharingOffInThePolicyDecidesNothing) {
  Policy policy;
  policy.sharing.enabled = false;
  Outcome o = Sharing(GpuPod({{"gpuadmit.io/sharing-mode", "mps"}}), snapshot_, policy);
  EXPECT_FALSE(o.d.Changes());
  EXPECT_TRUE(o.d.warnings.empty());
}

TEST_F(SharingTest, PodsAlreadyOnMigOrSharedGpusAreNotCandidates) {
  for (const char* resource : {k2g, kShared}) {
    json pod = GpuPod({{"gpuadmit.io/sharing-mode", "mps"}});
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{resource, "1"}}}};
    Outcome alone = Sharing(pod, snapshot_);
    EXPECT_FALSE(alone.d.Changes()) << resource;
    EXPECT_TRUE(alone.d.trail.empty()) << resource;
    // Next to a whole GPU, too: the pod already chose how it shares.
    pod["spec"]["containers"].push_back(
        {{"name", "second"}, {"resources", {{"limits", {{kGpu, "1"}}}}}});
    Outcome mixed = Sharing(pod, snapshot_);
    EXPECT_FALSE(mixed.d.Changes()) << resource;
    EXPECT_EQ(mixed.d.trail, std::vector<std::string>{std::string("sharing: already asks for ") +
                                                      resource + ": left as asked"});
  }
}

TEST_F(SharingTest, FreeCountsAreNetOfReservations) {
  struct AllTaken : Reservations {
    int64_t Reserved(std::string_view, std::string_view resource, std::string_view) const override {
      return resource == kShared ? 8 : 0;
    }
    bool Holds(std::string_view, std::string_view) const override { return false; }
    bool Commit(const std::string&, const std::string&, const std::vector<Claim>&) override {
      return false;
    }
  } reservations;
  json pod = GpuPod(json::object(), Typed("inference"));
  PodRequest request =
      PodRequest::From("default", "Pod default/p", pod.at("spec"), &pod.at("metadata"), true);
  Policy policy;
  PlanContext context{snapshot_, policy, nullptr, &reservations};
  PlanState state{request.needs.containers, request.needs.effective};
  Decision d;
  PlanSharing(request, context, state, d);
  EXPECT_TRUE(d.swaps.empty());
  EXPECT_EQ(d.warnings.size(), 1u);
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit::testing {
namespace {

// All four stages: a pod the sharing stage moves to MIG (or MPS) is counted once, on the node
// placement steers it to, not again by the fallback stage or by placement.
TEST(PlanAllStages, APodMovedToASharedDeviceReservesExactlyOneDevice) {
  InventorySnapshot snapshot = SnapshotOf(SharingCluster());
  Policy policy;
  for (const json& pod : {GpuPod({{"gpuadmit.io/gpu-memory", "8Gi"}}, Typed("batch")),
                          GpuPod({}, Typed("inference"))}) {
    PodRequest request =
        PodRequest::From("default", "Pod default/p", pod.at("spec"), &pod.at("metadata"), true);
    Decision d = Plan(request, PlanContext{snapshot, policy});
    ASSERT_EQ(d.claims.size(), 1u) << pod.dump();
    EXPECT_EQ(d.claims[0].count, 1);
    ASSERT_EQ(d.preferred.size(), 1u);
    EXPECT_EQ(d.preferred[0].requirements[0].values, std::vector<std::string>{d.claims[0].node});
  }
}

}  // namespace
}  // namespace gpuadmit::testing
