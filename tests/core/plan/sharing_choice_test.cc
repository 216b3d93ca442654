// Plan stage 2: which mode a pod gets besides the default flow (rules, opt-outs, an explicit
// sharing-mode) and what happens when the chosen mode cannot be applied.
#include <gtest/gtest.h>

#include "core/plan/sharing.h"
#include "tests/core/plan/sharing_test_support.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::GpuPod;
using testing::kShared;
using testing::Outcome;
using testing::Sharing;
using testing::SharingCluster;
using testing::SharingTest;
using testing::SnapshotOf;
using testing::SwapsOf;
using testing::Traced;
using testing::Typed;

TEST_F(SharingTest, TheFirstMatchingRuleWins) {
  Policy policy;
  SharingRule ts{"dev-ts", 10, {}, SharingMode::kTimeSlicing, ""};
  ts.match.workload_types = {"inference"};
  SharingRule mps{"all-mps", 5, {}, SharingMode::kMps, ""};
  mps.match.namespaces = {"default"};
  policy.sharing.rules = {ts, mps};
  Outcome o = Sharing(GpuPod(json::object(), Typed("inference")), snapshot_, policy);
  EXPECT_EQ(o.state.mode, SharingMode::kTimeSlicing);
  EXPECT_TRUE(Traced(o.d, "sharing: time-slicing (rule dev-ts)"));
  Outcome other = Sharing(GpuPod(json::object(), Typed("batch")), snapshot_, policy);
  EXPECT_EQ(other.state.mode, SharingMode::kMps);
  EXPECT_TRUE(Traced(other.d, "sharing: mps (rule all-mps)"));
}

TEST_F(SharingTest, ARuleBeatsTheDefaultFlowEvenToKeepAPodExclusive) {
  Policy policy;
  SharingRule keep{"keep-serving", 1, {}, SharingMode::kExclusive, ""};
  keep.match.pod_labels = {{"team", "search"}};
  policy.sharing.rules = {keep};
  json labels = Typed("inference");
  labels["team"] = "search";
  Outcome o = Sharing(GpuPod(json::object(), labels), snapshot_, policy);
  EXPECT_FALSE(o.d.Changes());
  EXPECT_TRUE(Traced(o.d, "sharing: exclusive (rule keep-serving)"));
}

TEST_F(SharingTest, ARulesMigProfileIsUsedUnlessThePodNamesOne) {
  Policy policy;
  SharingRule mig{"small", 1, {}, SharingMode::kMig, "2g.20gb"};
  mig.match.max_memory_mib = 16000;
  policy.sharing.rules = {mig};
  json memory = {{"gpuadmit.io/gpu-memory", "8000"}};
  EXPECT_EQ(SwapsOf(Sharing(GpuPod(memory), snapshot_, policy).d),
            "nvidia.com/gpu->nvidia.com/mig-2g.20gb");
  memory["gpu-autoscaler.io/mig-profile"] = "1g.10gb";
  EXPECT_EQ(SwapsOf(Sharing(GpuPod(memory), snapshot_, policy).d),
            "nvidia.com/gpu->nvidia.com/mig-1g.10gb");
}

TEST_F(SharingTest, OptOutsLeaveThePodAlone) {
  struct Case {
    json annotations;
    json labels;
    std::string trail;  // "" when the stage says nothing
  } cases[] = {
      {{{"gpu-autoscaler.io/optimize", "false"}}, Typed("inference"), ""},
      // Messages name the key as the pod wrote it.
      {{{"gpu-autoscaler.io/sharing", "disabled"}},
       Typed("inference"),
       "sharing: gpu-autoscaler.io/sharing is \"disabled\": exclusive"},
      {{{"gpuadmit.io/sharing", "Disabled"}, {"gpuadmit.io/sharing-mode", "mps"}},
       json::object(),
       "sharing: gpuadmit.io/sharing is \"disabled\": exclusive"},
      {{{"gpu-autoscaler.io/mps-enabled", "false"}},
       Typed("inference"),
       "  default flow: inference would use mps, but gpu-autoscaler.io/mps-enabled is \"false\""},
  };
  for (const Case& c : cases) {
    Outcome o = Sharing(GpuPod(c.annotations, c.labels), snapshot_);
    EXPECT_FALSE(o.d.Changes()) << c.annotations.dump();
    EXPECT_TRUE(o.d.warnings.empty()) << c.annotations.dump();
    if (!c.trail.empty()) {
      EXPECT_TRUE(Traced(o.d, c.trail)) << ::testing::PrintToString(o.d.trail);
    }
  }
}

TEST_F(SharingTest, MpsEnabledFalseDisablesOnlyMps) {
  json off = {{"gpuadmit.io/mps-enabled", "false"}};
  EXPECT_EQ(Sharing(GpuPod(off, Typed("batch")), snapshot_).state.mode, SharingMode::kTimeSlicing);
  off["gpuadmit.io/gpu-memory"] = "8000";
  EXPECT_EQ(Sharing(GpuPod(off, Typed("inference")), snapshot_).state.mode, SharingMode::kMig);
}

TEST_F(SharingTest, AnExplicitModeIsHonouredOverRulesAndTheDefaultFlow) {
  Policy policy;
  SharingRule ts{"everything-ts", 1, {}, SharingMode::kTimeSlicing, ""};
  policy.sharing.rules = {ts};
  struct Case {
    json annotations;
    std::string swaps;
    SharingMode mode;
  } cases[] = {
      {{{"gpu-autoscaler.io/sharing-mode", "mps"}},
       "nvidia.com/gpu->nvidia.com/gpu.shared",
       SharingMode::kMps},
      {{{"gpu-autoscaler.io/sharing-mode", "mig"}, {"gpu-autoscaler.io/mig-profile", "2g.20gb"}},
       "nvidia.com/gpu->nvidia.com/mig-2g.20gb",
       SharingMode::kMig},
      {{{"gpuadmit.io/sharing-mode", "mig"}, {"gpuadmit.io/mig-profile", "nvidia.com/mig-2g.20gb"}},
       "nvidia.com/gpu->nvidia.com/mig-2g.20gb",
       SharingMode::kMig},
      // No memory need and no profile: the smallest profile free.
      {{{"gpuadmit.io/sharing-mode", "MIG"}},
       "nvidia.com/gpu->nvidia.com/mig-1g.10gb",
       SharingMode::kMig},
      {{{"gpuadmit.io/sharing-mode", "exclusive"}}, "", SharingMode::kExclusive},
  };
  for (const Case& c : cases) {
    Outcome o = Sharing(GpuPod(c.annotations, Typed("inference")), snapshot_, policy);
    EXPECT_EQ(SwapsOf(o.d), c.swaps) << c.annotations.dump();
    EXPECT_EQ(o.state.mode, c.mode) << c.annotations.dump();
  }
}

TEST_F(SharingTest, AnUnknownExplicitModeIsAWarningAndTheFlowGoesOn) {
  Outcome o =
      Sharing(GpuPod({{"gpuadmit.io/sharing-mode", "turbo"}}, Typed("inference")), snapshot_);
  EXPECT_EQ(o.state.mode, SharingMode::kMps);
  EXPECT_EQ(o.d.warnings.front(),
            "gpuadmit: Pod default/p: gpuadmit.io/sharing-mode \"turbo\" is "
            "not exclusive, mig, mps or time-slicing: ignored");
}

TEST_F(SharingTest, WhatCannotBeAppliedLeavesThePodUnchangedWithOneWarning) {
  json full = SharingCluster();
  AddBoundPods(full, "gpu-mps", kShared, 8);
  InventorySnapshot mps_full = SnapshotOf(full);
  Policy no_mps;
  no_mps.sharing.enable_mps = false;
  json pinned_ts = GpuPod({{"gpuadmit.io/sharing-mode", "mps"}});
  pinned_ts["spec"]["nodeSelector"] = {{"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  json pinned_host = GpuPod({{"gpuadmit.io/sharing-mode", "mps"}});
  pinned_host["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "gpu-ts"}};
  struct Case {
    json pod;
    const InventorySnapshot* snapshot;
    Policy policy;
    std::string warning;
  } cases[] = {
      {GpuPod({{"gpuadmit.io/sharing-mode", "mps"}}),
       &mps_full,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: no node labelled nvidia.com/gpu.sharing-strategy=mps has nvidia.com/gpu.shared "
       "free for this pod)"},
      {GpuPod(json::object(), Typed("inference")),
       &mps_full,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from default flow: inference not "
       "applied: no node labelled nvidia.com/gpu.sharing-strategy=mps has nvidia.com/gpu.shared "
       "free for this pod)"},
      {GpuPod({{"gpuadmit.io/sharing-mode", "mps"}}), &snapshot_, no_mps,
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: the policy disables MPS)"},
      {GpuPod({{"gpuadmit.io/sharing-mode", "mps"}, {"gpuadmit.io/mps-enabled", "false"}}),
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: gpuadmit.io/mps-enabled is \"false\")"},
      {GpuPod({{"gpuadmit.io/sharing-mode", "mps"}}, json::object(), 2),
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: sharing modes are for one-GPU pods; this one asks for 2)"},
      {pinned_ts,
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: its nodeSelector asks for nvidia.com/gpu.sharing-strategy=time-slicing)"},
      {pinned_host,
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mps from gpuadmit.io/sharing-mode not "
       "applied: no node labelled nvidia.com/gpu.sharing-strategy=mps has nvidia.com/gpu.shared "
       "free for this pod)"},
      {GpuPod({{"gpu-autoscaler.io/sharing-mode", "mig"},
               {"gpu-autoscaler.io/mig-profile", "1g.5gb"}}),
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mig from gpu-autoscaler.io/sharing-mode not "
       "applied: nvidia.com/mig-1g.5gb is free on no node this pod may use)"},
      {GpuPod({{"gpuadmit.io/sharing-mode", "mig"}, {"gpuadmit.io/mig-profile", "big"}}),
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mig from gpuadmit.io/sharing-mode not "
       "applied: \"big\" is not a MIG profile such as 1g.10gb)"},
      {GpuPod({{"gpuadmit.io/sharing-mode", "mig"}, {"gpuadmit.io/gpu-memory", "30Gi"}}),
       &snapshot_,
       {},
       "gpuadmit: Pod default/p keeps nvidia.com/gpu (mig from gpuadmit.io/sharing-mode not "
       "applied: no MIG profile with at least 30720 MiB is free on a node this pod may use)"},
  };
  for (const Case& c : cases) {
    Outcome o = Sharing(c.pod, *c.snapshot, c.policy);
    EXPECT_FALSE(o.d.Changes()) << c.warning;
    EXPECT_TRUE(o.d.claims.empty()) << c.warning;
    EXPECT_EQ(o.state.mode, SharingMode::kExclusive) << c.warning;
    EXPECT_EQ(o.d.warnings, std::vector<std::string>{c.warning});
  }
}

}  // namespace
}  // namespace gpuadmit
