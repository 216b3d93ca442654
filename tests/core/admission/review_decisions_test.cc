// ReviewAnswer::decisions: what each planning stage did, counted per pod spec and summed per
// review, on the seed 003 demo cluster. Every test compares the whole DecisionCounts value.
#include <gtest/gtest.h>

#include <ostream>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {

// Readable failures: the non-zero counts, by index.
void PrintTo(const DecisionCounts& c, std::ostream* os) {
  *os << "{points";
  for (size_t i = 0; i < c.points.size(); ++i) {
    if (c.points[i] != 0) *os << " [" << i << "]=" << c.points[i];
  }
  *os << ", modes";
  for (size_t i = 0; i < c.modes.size(); ++i) {
    if (c.modes[i] != 0) *os << " [" << i << "]=" << c.modes[i];
  }
  *os << ", fallbacks";
  for (const MigFallbackStep& f : c.fallbacks) *os << " " << f.from << "->" << f.to;
  *os << ", mig_eligible " << c.mig_eligible << ", saved_micro_gpus " << c.saved_micro_gpus << "}";
}

namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::AddSharedGpuNode;
using testing::DemoCluster;
using testing::ReadJsonFile;
using testing::ReadSourceFile;
using testing::SnapshotOf;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

DecisionCounts Counts(std::initializer_list<DecisionPoint> points) {
  DecisionCounts c;
  for (DecisionPoint p : points) c.Mark(p);
  return c;
}

DecisionCounts DecisionsOf(const std::string& body, const InventorySnapshot& s, const Policy& p,
                           bool stale = false) {
  auto r = Review(body, s, p, nullptr, stale);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value().decisions : DecisionCounts{};
}

InventorySnapshot Exhausted2g() {
  json cluster = DemoCluster();
  AddBoundPods(cluster, "gpu-medium", k2g, 7);
  return SnapshotOf(cluster);
}

InventorySnapshot Exhausted2gAnd1g() {
  json cluster = DemoCluster();
  AddBoundPods(cluster, "gpu-medium", k2g, 7);
  AddBoundPods(cluster, "gpu-medium", k1g, 3);
  AddBoundPods(cluster, "gpu-small", k1g, 22);
  return SnapshotOf(cluster);
}

// kubectl's whole-GPU Pod review with `container` merged into container 0, and annotations.
std::string WholeGpuPod(const json& container, const json& annotations = json::object()) {
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
  json& pod = review["request"]["object"];
  pod["spec"]["containers"][0].merge_patch(container);
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return review.dump();
}

TEST(ReviewDecisions, AFallbackCountsItsProfilePairAndTheNodeChosen) {
  DecisionCounts want = Counts({DecisionPoint::kMigFallback, DecisionPoint::kPlacementChosen});
  want.fallbacks = {{"2g.20gb", "1g.10gb"}};
  EXPECT_EQ(
      DecisionsOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), Exhausted2g(), Policy{}),
      want);
}

TEST(ReviewDecisions, ADeploymentsTemplateCountsOncePerPodSpecNotPerReplica) {
  DecisionCounts want = Counts({DecisionPoint::kMigFallback});
  want.fallbacks = {{"2g.20gb", "1g.10gb"}};
  // A template is never steered to a node: no placement outcome.
  EXPECT_EQ(DecisionsOf(ReadSourceFile("tests/fixtures/gpu/kubectl-deployment.json"), Exhausted2g(),
                        Policy{}),
            want);
}

TEST(ReviewDecisions, NothingFreeCountsTheExhaustionAndNoNode) {
  EXPECT_EQ(DecisionsOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), Exhausted2gAnd1g(),
                        Policy{}),
            Counts({DecisionPoint::kMigExhausted, DecisionPoint::kPlacementNone}));
}

TEST(ReviewDecisions, ADenialCountsTheReviewDeniedAndWhatLedToIt) {
  Policy p;
  p.mig.on_exhausted = ExhaustedAction::kDeny;
  EXPECT_EQ(
      DecisionsOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), Exhausted2gAnd1g(), p),
      Counts({DecisionPoint::kMigExhausted, DecisionPoint::kReviewDenied}));
}

TEST(ReviewDecisions, AStaleInventoryCountsTheSkipAndNoStage) {
  EXPECT_EQ(DecisionsOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), Exhausted2g(),
                        Policy{}, /*stale=*/true),
            Counts({DecisionPoint::kReviewSkippedStale}));
}

// The requirements stage alone: sharing and placement off.
Policy RequirementsOnly(GpuCountAction action) {
  Policy p;
  p.sharing.enabled = false;
  p.placement.enabled = false;
  p.requirements.gpu_count = action;
  return p;
}

TEST(ReviewDecisions, AGpuCountIsCountedWarnedCorrectedOrFilledOncePerPodSpec) {
  InventorySnapshot s = SnapshotOf(DemoCluster());
  // Two containers whose tensor parallelism (2) disagrees with their one GPU: one pod spec.
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
  json& containers = review["request"]["object"]["spec"]["containers"];
  containers[0]["args"] = {"vllm", "serve", "facebook/opt-125m", "--tp", "2"};
  containers.push_back(containers[0]);
  containers[1]["name"] = "second";
  EXPECT_EQ(DecisionsOf(review.dump(), s, RequirementsOnly(GpuCountAction::kWarn)),
            Counts({DecisionPoint::kRequirementsWarned}));
  EXPECT_EQ(DecisionsOf(review.dump(), s, RequirementsOnly(GpuCountAction::kCorrect)),
            Counts({DecisionPoint::kRequirementsCorrected}));
  for (json& c : containers) c.erase("resources");
  EXPECT_EQ(DecisionsOf(review.dump(), s, RequirementsOnly(GpuCountAction::kFill)),
            Counts({DecisionPoint::kRequirementsFilled}));
}

// Placement off, so that the counts are the sharing stage's.
Policy SharingOnly() {
  Policy p;
  p.placement.enabled = false;
  return p;
}

InventorySnapshot WithSharedNodes() {
  json cluster = DemoCluster();
  AddSharedGpuNode(cluster, "gpu-mps", "mps", 2, 4);
  AddSharedGpuNode(cluster, "gpu-ts", "time-slicing", 2, 4);
  return SnapshotOf(cluster);
}

TEST(ReviewDecisions, ASmallModelOnMigIsEligibleAndSavesSixSeventhsOfAGpu) {
  DecisionCounts want = Counts({DecisionPoint::kSharingApplied});
  want.MarkMode(SharingMode::kMig);
  want.mig_eligible = 1;
  want.saved_micro_gpus = 857'143;  // 1 GPU less 1g.10gb's 1/7, rounded to a millionth
  EXPECT_EQ(DecisionsOf(WholeGpuPod({{"args", {"vllm serve facebook/opt-125m"}}}),
                        WithSharedNodes(), SharingOnly()),
            want);
}

TEST(ReviewDecisions, AnInferencePodOnAGpuSharedFourWaysSavesThreeQuarters) {
  DecisionCounts want = Counts({DecisionPoint::kSharingApplied});
  want.MarkMode(SharingMode::kMps);
  want.saved_micro_gpus = 750'000;
  EXPECT_EQ(DecisionsOf(WholeGpuPod(json::object(), {{"gpuadmit.io/workload-type", "inference"}}),
                        WithSharedNodes(), SharingOnly()),
            want);
}

TEST(ReviewDecisions, TrainingIsExclusiveAndNotMigEligibleWhateverItsMemory) {
  DecisionCounts want;
  want.MarkMode(SharingMode::kExclusive);
  EXPECT_EQ(DecisionsOf(WholeGpuPod({{"args", {"vllm serve facebook/opt-125m"}}},
                                    {{"gpuadmit.io/workload-type", "training"}}),
                        WithSharedNodes(), SharingOnly()),
            want);
}

TEST(ReviewDecisions, AModeThatCannotBeAppliedCountsNotAppliedAndNoMode) {
  // MPS asked for on a cluster with no MPS node: the pod keeps its whole GPU.
  EXPECT_EQ(DecisionsOf(WholeGpuPod(json::object(), {{"gpuadmit.io/sharing-mode", "mps"}}),
                        SnapshotOf(DemoCluster()), SharingOnly()),
            Counts({DecisionPoint::kSharingNotApplied}));
}

TEST(ReviewDecisions, AddingTalliesSumsEveryCountAndKeepsEveryFallback) {
  DecisionCounts a = Counts({DecisionPoint::kMigFallback, DecisionPoint::kPlacementChosen});
  a.fallbacks = {{"2g.20gb", "1g.10gb"}};
  a.saved_micro_gpus = 3;
  DecisionCounts b = Counts({DecisionPoint::kMigFallback});
  b.fallbacks = {{"3g.40gb", "2g.20gb"}};
  b.MarkMode(SharingMode::kMig);
  b.mig_eligible = 1;
  b.saved_micro_gpus = 4;
  a.Add(std::move(b));
  DecisionCounts want;
  want.points[static_cast<size_t>(DecisionPoint::kMigFallback)] = 2;
  want.Mark(DecisionPoint::kPlacementChosen);
  want.MarkMode(SharingMode::kMig);
  want.fallbacks = {{"2g.20gb", "1g.10gb"}, {"3g.40gb", "2g.20gb"}};
  want.mig_eligible = 1;
  want.saved_micro_gpus = 7;
  EXPECT_EQ(a, want);
}

}  // namespace
}  // namespace gpuadmit
