#include "webhook/admission/admission_handler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

class AdmissionHandlerTest : public ::testing::Test {
 protected:
  AdmissionHandlerTest() : log_(LogLevel::kError), handler_(log_, metrics_) {
    handler_.SetPolicy(std::make_shared<const Policy>());
    handler_.SetSnapshot(
        std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  }

  Logger log_;
  Metrics metrics_;
  AdmissionHandler handler_;
};

TEST_F(AdmissionHandlerTest, TransportRulesGiveTheirStatusAndAOneLineJsonReason) {
  std::string good = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  struct Case {
    std::string content_type;
    std::string body;
    int status;
    std::string error;
  } cases[] = {
      {"application/json", "", 400, "empty body"},
      {"application/json", std::string(kMaxReviewBody + 1, ' '), 413, "body larger than 7 MiB"},
      {"text/plain", good, 415, "content type \"text/plain\" is not application/json"},
      {"", good, 415, "content type \"\" is not application/json"},
      {"application/json", "{", 400,
       "invalid JSON: The JSON document has an improper structure: missing or superfluous commas, "
       "braces, missing keys, etc."},
  };
  for (const Case& c : cases) {
    HandlerAnswer a = handler_.Handle(c.content_type, c.body);
    EXPECT_EQ(a.status, c.status) << c.error;
    EXPECT_EQ(json::parse(a.body), json({{"error", c.error}}));
  }
  EXPECT_EQ(metrics_.Value(Counter::kBadRequests), 2u);
  EXPECT_EQ(metrics_.Value(Counter::kPayloadTooLarge), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kUnsupportedMedia), 2u);
}

TEST_F(AdmissionHandlerTest, JsonContentTypeMayCarryParametersAndAnyCase) {
  EXPECT_TRUE(IsJsonContentType("application/json"));
  EXPECT_TRUE(IsJsonContentType("application/json; charset=utf-8"));
  EXPECT_TRUE(IsJsonContentType("Application/JSON;charset=UTF-8"));
  EXPECT_FALSE(IsJsonContentType("application/jsonx"));
  EXPECT_FALSE(IsJsonContentType("application/yaml"));
}

TEST_F(AdmissionHandlerTest, ReviewsAreAnsweredAndCountedByOutcome) {
  HandlerAnswer a = handler_.Handle("application/json",
                                    testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(json::parse(a.body)["response"]["allowed"], true);
  handler_.Handle("application/json",
                  testing::ReadSourceFile("tests/fixtures/bad/object-wrong-type.json"));
  // Patched: 2g.20gb is free, and placement prefers gpu-medium, the node offering it.
  EXPECT_EQ(metrics_.Value(Counter::kReviewsPatched), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kReviewsFailOpen), 1u);
  EXPECT_NE(metrics_.Render().find("gpuadmit_admission_reviews_total{outcome=\"fail_open\"} 1\n"),
            std::string::npos);
}

TEST_F(AdmissionHandlerTest, ReadyOnlyOncePolicyAndInventoryAreLoaded) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler fresh(log, metrics);
  EXPECT_FALSE(fresh.Ready());
  fresh.SetPolicy(std::make_shared<const Policy>());
  EXPECT_FALSE(fresh.Ready());
  fresh.SetSnapshot(std::make_shared<const InventorySnapshot>());
  EXPECT_TRUE(fresh.Ready());
}

// Seed 003's demo cluster with every 2g.20gb taken: a 2g.20gb pod falls back to 1g.10gb.
std::shared_ptr<const InventorySnapshot> Exhausted2g() {
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  return std::make_shared<const InventorySnapshot>(testing::SnapshotOf(cluster));
}

TEST_F(AdmissionHandlerTest, AFallbackCountsItsProfilePairAndItsStages) {
  handler_.SetSnapshot(Exhausted2g());
  HandlerAnswer a = handler_.Handle("application/json",
                                    testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(metrics_.MigFallbacks("2g.20gb", "1g.10gb"), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kMigFallback), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kPlacementChosen), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kMigExhausted), 0u);
  std::string text = metrics_.Render();
  EXPECT_NE(text.find("\ngpuadmit_mig_fallbacks_total{from_profile=\"2g.20gb\","
                      "to_profile=\"1g.10gb\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("\ngpuadmit_decisions_total{stage=\"mig_fallback\",outcome=\"fallback\"} 1\n"),
      std::string::npos)
      << text;
  // The patched pod, reviewed again, falls back no further.
  json again = testing::ReadJsonFile("tests/fixtures/gpu/kubectl-pod.json");
  json& pod = again["request"]["object"];
  pod = pod.patch(testing::PatchOf(json::parse(a.body)["response"]));
  ASSERT_EQ(handler_.Handle("application/json", again.dump()).status, 200);
  EXPECT_EQ(metrics_.MigFallbacks("2g.20gb", "1g.10gb"), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kMigFallback), 1u);
}

TEST_F(AdmissionHandlerTest, ASharingDecisionCountsItsModeEligibilityAndSavings) {
  json review = testing::ReadJsonFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
  review["request"]["object"]["spec"]["containers"][0]["args"] = {"vllm serve facebook/opt-125m"};
  HandlerAnswer a = handler_.Handle("application/json", review.dump());
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(metrics_.Value(Counter::kSharingModeMig), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kSharingModeExclusive), 0u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kSharingApplied), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kMigEligiblePods), 1u);
  std::string text = metrics_.Render();
  EXPECT_NE(text.find("\ngpuadmit_sharing_mode_applied_total{mode=\"mig\"} 1\n"), std::string::npos)
      << text;
  // 1g.10gb is 1/7 of a GPU: 6/7 of the whole GPU asked for is not taken.
  EXPECT_NE(text.find("\ngpuadmit_estimated_gpu_savings_total 0.857143\n"), std::string::npos)
      << text;
}

TEST_F(AdmissionHandlerTest, AStaleSkipCountsItsStageAndNoOther) {
  handler_.SetStalenessCheck([] { return true; });
  HandlerAnswer a = handler_.Handle("application/json",
                                    testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(metrics_.Value(Counter::kSkippedStale), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kReviewSkippedStale), 1u);
  for (DecisionPoint p : {DecisionPoint::kMigFallback, DecisionPoint::kPlacementChosen,
                          DecisionPoint::kPlacementNone, DecisionPoint::kSharingApplied}) {
    EXPECT_EQ(metrics_.Decisions(p), 0u) << static_cast<int>(p);
  }
  EXPECT_NE(metrics_.Render().find(
                "\ngpuadmit_decisions_total{stage=\"review\",outcome=\"skipped_stale\"} 1\n"),
            std::string::npos);
}

TEST_F(AdmissionHandlerTest, ADenialCountsTheReviewStage) {
  auto policy = std::make_shared<Policy>();
  policy->mig.on_exhausted = ExhaustedAction::kDeny;
  handler_.SetPolicy(policy);
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  testing::AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-1g.10gb", 3);
  testing::AddBoundPods(cluster, "gpu-small", "nvidia.com/mig-1g.10gb", 22);
  handler_.SetSnapshot(std::make_shared<const InventorySnapshot>(testing::SnapshotOf(cluster)));
  HandlerAnswer a = handler_.Handle("application/json",
                                    testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(json::parse(a.body)["response"]["allowed"], false);
  EXPECT_EQ(metrics_.Value(Counter::kReviewsDenied), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kReviewDenied), 1u);
  EXPECT_EQ(metrics_.Decisions(DecisionPoint::kMigExhausted), 1u);
}

// The node a whole-GPU pod's answer prefers ("" when it prefers none), and its trail as the
// decision log keeps it.
std::pair<std::string, std::vector<std::string>> PreferredNode(AdmissionHandler& handler) {
  HandlerAnswer a = handler.Handle(
      "application/json", testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json"));
  EXPECT_EQ(a.status, 200);
  std::vector<std::string> trail = handler.decision_log().Recent().front().trail;
  for (const json& op : testing::PatchOf(json::parse(a.body)["response"])) {
    if (op["path"] != "/spec/affinity") continue;
    return {op["value"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
              ["preference"]["matchExpressions"][0]["values"][0]
                  .get<std::string>(),
            trail};
  }
  return {"", trail};
}

TEST(AdmissionHandlerExplain, TheAnswerCarriesTheTrailOnlyWhenExplaining) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(
      testing::SnapshotOf(testing::ListOf({testing::GpuNode("gpu-a", 2)}))));
  const std::string body = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
  // Served: the decision log keeps the trail; the answer carries none.
  HandlerAnswer served = handler.Handle("application/json", body);
  ASSERT_EQ(served.status, 200);
  EXPECT_TRUE(served.trail.empty());
  const std::vector<std::string> logged = handler.decision_log().Recent().front().trail;
  ASSERT_FALSE(logged.empty());
  // review --explain: both have it.
  handler.SetExplain(true);
  HandlerAnswer explained = handler.Handle("application/json", body);
  ASSERT_EQ(explained.status, 200);
  EXPECT_FALSE(explained.trail.empty());
  EXPECT_EQ(explained.trail, handler.decision_log().Recent().front().trail);
  EXPECT_EQ(explained.body, served.body);
}

TEST(AdmissionHandlerGpuMetrics, PlacementReadsTheMetricsSetLast) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  auto policy = std::make_shared<Policy>();
  policy->sharing.enabled = false;  // the pod's whole GPU, as asked
  handler.SetPolicy(policy);
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(testing::SnapshotOf(
      testing::ListOf({testing::GpuNode("gpu-a", 2), testing::GpuNode("gpu-b", 2)}))));
  // No metrics: both nodes' GPUs count as idle; the name decides.
  EXPECT_EQ(PreferredNode(handler).first, "gpu-a");
  // gpu-a's two GPUs are busy: gpu-b has the idle ones.
  handler.SetGpuMetrics(std::make_shared<const ClusterGpuMetrics>(
      testing::MetricsOf(testing::DcgmGpu("gpu-a", 0, 97, 14000, 1000) +
                         testing::DcgmGpu("gpu-a", 1, 88, 9000, 6000))));
  auto [node, trail] = PreferredNode(handler);
  EXPECT_EQ(node, "gpu-b");
  // Debug logging is off: the trail names the choice without explaining every node.
  EXPECT_EQ(trail, (std::vector<std::string>{
                       "placement (most-idle): gpu-b for 1 nvidia.com/gpu, 2 of 2 nodes weighed; "
                       "kubernetes.io/hostname In [gpu-b], preferred, weight 100"}));
  handler.SetExplain(true);
  trail = PreferredNode(handler).second;
  EXPECT_NE(std::find(trail.begin(), trail.end(),
                      "  gpu-a: 2/2 free, idle 0, avg util 92.5%, avg mem 76.7% (ranked lower)"),
            trail.end());
  handler.SetGpuMetrics(nullptr);
  EXPECT_EQ(PreferredNode(handler).first, "gpu-a");
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(AdmissionHandlerDecisionLog, EachReviewIsRecordedWithWhatItAskedAndWhereItWent) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  EXPECT_EQ(handler.snapshot_at_unix_ms(), 0);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(
      std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  EXPECT_GT(handler.snapshot_at_unix_ms(), 0);
  HandlerAnswer a = handler.Handle("application/json",
                                   testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  ASSERT_EQ(a.status, 200);
  handler.Handle("application/json", "{");  // a 400 is not a review: not recorded
  std::vector<DecisionRecord> recent = handler.decision_log().Recent();
  ASSERT_EQ(recent.size(), 1u);
  const DecisionRecord& r = recent[0];
  EXPECT_EQ(r.uid, "5fd6ed4c-898d-41e6-a4e1-ba8f8efb07fd");
  EXPECT_EQ(r.object, "Pod default/gpu-pod");
  EXPECT_EQ(r.asked, "nvidia.com/mig-2g.20gb=1");
  EXPECT_EQ(r.outcome, ReviewOutcome::kPatched);
  EXPECT_FALSE(r.node.empty());
  EXPECT_NE(handler.snapshot()->FindNode(r.node), nullptr);
  ASSERT_EQ(r.trail.size(), 2u);
  EXPECT_EQ(r.trail.front(), "nvidia.com/mig-2g.20gb x1: free on " + r.node);
  EXPECT_TRUE(a.trail.empty());  // the record took it: the handler does not explain
  EXPECT_GE(r.at_unix_ms, handler.snapshot_at_unix_ms());
  EXPECT_EQ(
      handler.decision_log().Outcomes(r.at_unix_ms)[static_cast<size_t>(ReviewOutcome::kPatched)],
      1u);
}

}  // namespace
}  // namespace gpuadmit
