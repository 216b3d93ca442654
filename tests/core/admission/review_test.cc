// The seed 003 scenario end to end through core::Review, on real-shaped reviews: fallback when
// 2g.20gb is exhausted, unchanged when it is free, a warning when nothing is; every patch applied
// (nlohmann's RFC 6902 implementation) and reviewed again to prove idempotency.
#include "core/admission/review.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/admission/admission.h"
#include "core/admission/base64.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::DemoCluster;
using testing::ReadSourceFile;
using testing::SnapshotOf;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

struct Answer {
  json response;
  json patch = json::array();
};

// The default policy with placement off: the patches and warnings are the fallback's alone
// (tests/core/plan/placement_test.cc and placement_patch_test.cc cover placement).
Policy FallbackOnly() {
  Policy p;
  p.placement.enabled = false;
  return p;
}

Answer ReviewOf(const std::string& body, const InventorySnapshot& s,
                const Policy& p = FallbackOnly()) {
  auto r = Review(body, s, p);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  Answer a;
  a.response = json::parse(r.value().body).at("response");
  a.patch = testing::PatchOf(a.response);
  if (a.response.contains("patch")) {
    EXPECT_EQ(Base64Encode(a.patch.dump()), a.response["patch"]);  // the encoding round-trips
  }
  return a;
}

// A cluster where every 2g.20gb is taken (seed 003: "2g.20gb not available").
json Exhausted2g() {
  json cluster = DemoCluster();
  AddBoundPods(cluster, "gpu-medium", k2g, 7);
  return cluster;
}

json Exhausted2gAnd1g() {
  json cluster = Exhausted2g();
  AddBoundPods(cluster, "gpu-medium", k1g, 3);
  AddBoundPods(cluster, "gpu-small", k1g, 22);
  return cluster;
}

// Applies the answer's patch to the review's object and returns the review of the result.
std::string Patched(const std::string& body, const json& patch) {
  json review = json::parse(body);
  review["request"]["object"] = review["request"]["object"].patch(patch);
  return review.dump();
}

void ExpectIdempotent(const std::string& body, const Answer& first, const InventorySnapshot& s) {
  Answer again = ReviewOf(Patched(body, first.patch), s);
  EXPECT_FALSE(again.response.contains("patch")) << again.patch.dump();
}

TEST(Fallback, TwoGTwentyFreeLeavesThePodUnchanged) {
  Answer a =
      ReviewOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), SnapshotOf(DemoCluster()));
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch"));
  EXPECT_FALSE(a.response.contains("warnings"));
}

TEST(Fallback, TwoGTwentyFallsBackToOneGTenWhenNoneFreeOnAnyNode) {
  std::string body = ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  Answer a = ReviewOf(body, s);
  // kubectl's pod has no annotations: the map is created whole.
  EXPECT_EQ(a.patch, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1mig-2g.20gb"},
    {"op":"add","path":"/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"remove","path":"/spec/containers/0/resources/requests/nvidia.com~1mig-2g.20gb"},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"add","path":"/metadata/annotations","value":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}}
  ])"));
  EXPECT_EQ(a.response["warnings"],
            json::array({"gpuadmit: Pod default/gpu-pod falls back 2g.20gb->1g.10gb (requested "
                         "MIG profile free on no node)"}));
  ExpectIdempotent(body, a, s);
}

TEST(Fallback, BothExhaustedLeavesThePodUnchangedWithAWarning) {
  Answer a = ReviewOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"),
                      SnapshotOf(Exhausted2gAnd1g()));
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch"));
  EXPECT_EQ(a.response["warnings"],
            json::array({"nvidia.com/mig-2g.20gb is free on no node Pod default/gpu-pod may use, "
                         "and no smaller MIG profile is either; left unchanged"}));
}

TEST(Fallback, BothExhaustedIsDeniedWhenThePolicySaysDeny) {
  Policy p;
  p.mig.on_exhausted = ExhaustedAction::kDeny;
  Answer a = ReviewOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"),
                      SnapshotOf(Exhausted2gAnd1g()), p);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_EQ(a.response["status"]["code"], 403);
}

TEST(Fallback, TemplatesOfEveryWorkloadKindFallBackInTheirTemplate) {
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  struct Case {
    const char* fixture;
    const char* spec;
    const char* annotations_op;
  } cases[] = {
      {"kubectl-deployment.json", "/spec/template/spec", "/spec/template/metadata/annotations"},
      {"kubectl-job.json", "/spec/template/spec", "/spec/template/metadata/annotations"},
      {"kubectl-cronjob.json", "/spec/jobTemplate/spec/template/spec",
       "/spec/jobTemplate/spec/template/metadata/annotations"},
  };
  for (const Case& c : cases) {
    std::string body = ReadSourceFile(std::string("tests/fixtures/gpu/") + c.fixture);
    Answer a = ReviewOf(body, s);
    ASSERT_EQ(a.patch.size(), 5u) << c.fixture;
    EXPECT_EQ(a.patch[1]["path"],
              std::string(c.spec) + "/containers/0/resources/limits/nvidia.com~1mig-1g.10gb");
    EXPECT_EQ(a.patch[4]["path"], c.annotations_op) << c.fixture;
    ExpectIdempotent(body, a, s);
  }
}

TEST(Fallback, ExistingAnnotationsGetOneMoreKey) {
  std::string body = ReadSourceFile("tests/fixtures/gpu/pod-runai-mig.json");
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  Answer a = ReviewOf(body, s);
  ASSERT_FALSE(a.patch.empty());
  EXPECT_EQ(
      a.patch.back(),
      json::parse(
          R"({"op":"add","path":"/metadata/annotations/gpuadmit.io~1fallback","value":"2g.20gb->1g.10gb"})"));
  ExpectIdempotent(body, a, s);
}

TEST(Fallback, LimitsOnlyContainersChangeOnlyTheirLimits) {
  std::string body = ReadSourceFile("tests/fixtures/gpu/pod-runai-reservation-limits-only.json");
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  Answer a = ReviewOf(body, s);
  for (const json& op : a.patch) {
    EXPECT_EQ(op["path"].get<std::string>().find("/requests/"), std::string::npos) << op.dump();
  }
  ExpectIdempotent(body, a, s);
}

TEST(Fallback, EveryContainerAskingForTheProfileMovesTogether) {
  std::string body = ReadSourceFile("tests/fixtures/gpu/kubectl-pod-multi-container.json");
  json cluster = DemoCluster();
  AddBoundPods(cluster, "gpu-medium", k2g, 6);  // 1 left: the pod needs 2 (max(init 1, apps 2))
  InventorySnapshot s = SnapshotOf(cluster);
  Answer a = ReviewOf(body, s);
  json patched = json::parse(Patched(body, a.patch))["request"]["object"]["spec"];
  for (const char* field : {"initContainers", "containers"}) {
    for (const json& c : patched[field]) {
      EXPECT_FALSE(c["resources"]["limits"].contains(k2g)) << c.dump();
      EXPECT_TRUE(c["resources"]["limits"].contains(k1g)) << c.dump();
    }
  }
  ExpectIdempotent(body, a, s);
}

TEST(Fallback, MultiTierSkipsAProfileThatIsNotFreeEither) {
  // A 70 GB H200 with 3g.40gb, 2g.20gb and 1g.10gb, 3g.40gb and 2g.20gb all taken.
  json cluster = DemoCluster();
  for (json& item : cluster["items"]) {
    if (item["metadata"]["name"] == "gpu-medium")
      item["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] = "2";
  }
  AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-3g.40gb", 2);
  AddBoundPods(cluster, "gpu-medium", k2g, 7);
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  json& res = review["request"]["object"]["spec"]["containers"][0]["resources"];
  res = {{"limits", {{"nvidia.com/mig-3g.40gb", "1"}}},
         {"requests", {{"nvidia.com/mig-3g.40gb", "1"}}}};
  Answer a = ReviewOf(review.dump(), SnapshotOf(cluster));
  ASSERT_EQ(a.patch.size(), 5u);
  EXPECT_EQ(a.patch[4]["value"], json({{"gpuadmit.io/fallback", "3g.40gb->1g.10gb"}}));
}

TEST(Fallback, OnlyNodesThePodMayUseCount) {
  // 2g.20gb is free on gpu-medium, but the pod selects gpu-small, which has only 1g.10gb.
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  review["request"]["object"]["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "gpu-small"}};
  Answer a = ReviewOf(review.dump(), SnapshotOf(DemoCluster()));
  ASSERT_FALSE(a.patch.empty());
  EXPECT_EQ(a.patch.back()["value"], json({{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}));
}

TEST(Fallback, CordonedAndNotReadyNodesOfferNothing) {
  json cluster = DemoCluster();
  for (json& item : cluster["items"]) {
    if (item["metadata"]["name"] == "gpu-medium") item["spec"]["unschedulable"] = true;
  }
  Answer a = ReviewOf(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"), SnapshotOf(cluster));
  ASSERT_FALSE(a.patch.empty());  // falls back to 1g.10gb on gpu-small
  EXPECT_EQ(a.patch.back()["value"], json({{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}));
}

TEST(Fallback, ThePolicyCanSwitchItOffAndChangeThePrefix) {
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  std::string body = ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  Policy off;
  off.mig.fallback = false;
  EXPECT_FALSE(ReviewOf(body, s, off).response.contains("patch"));
  Policy prefixed = FallbackOnly();
  prefixed.annotation_prefix = "gpu.example.com";
  EXPECT_EQ(ReviewOf(body, s, prefixed).patch.back()["value"],
            json({{"gpu.example.com/fallback", "2g.20gb->1g.10gb"}}));
}

TEST(QueueReview, APodThatFitsNowhereIsGatedReservesNothingAndIsGatedOnce) {
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  review["request"]["object"]["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  std::string body = review.dump();
  InventorySnapshot s = SnapshotOf(Exhausted2gAnd1g());
  Policy p = FallbackOnly();
  p.queue.enabled = true;
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);
  auto r = Review(body, s, p, &reservations);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().decisions.Count(DecisionPoint::kQueueGated), 1u);
  EXPECT_EQ(ledger.size(), 0u);
  json response = json::parse(r.value().body).at("response");
  json patch = testing::PatchOf(response);
  EXPECT_EQ(patch, json::parse(R"([
    {"op":"add","path":"/spec/schedulingGates/-","value":{"name":"gpuadmit.io/capacity"}},
    {"op":"add","path":"/metadata/annotations","value":{
      "gpuadmit.io/queue":"waiting: 1 nvidia.com/mig-2g.20gb free on no node it may use"}}
  ])"));
  auto again = Review(Patched(body, patch), s, p, &reservations);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(json::parse(again.value().body)["response"].contains("patch"));
  // The same pod where 2g.20gb is free: no gate, placed, and its device reserved.
  p.placement.enabled = true;
  auto fits = Review(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"),
                     SnapshotOf(DemoCluster()), p, &reservations);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits.value().decisions.Count(DecisionPoint::kQueueGated), 0u);
  EXPECT_EQ(fits.value().node, "gpu-medium");
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(Review, PassesWhatItMustNotTouch) {
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  for (const char* fixture : {
           "tests/fixtures/gpu/kubectl-pod-status-subresource.json",      // subresource
           "tests/fixtures/gpu/kubectl-deployment-update-same-gpu.json",  // GPU ask unchanged
           "tests/fixtures/admission/wrapped-pod-delete-with-oldobject.json",
           "tests/fixtures/admission/wrapped-deployment-delete-with-oldobject.json",
           "tests/fixtures/gpu/kubectl-pod-whole-gpu.json",  // no MIG ask
       }) {
    Answer a = ReviewOf(ReadSourceFile(fixture), s);
    EXPECT_EQ(a.response["allowed"], true) << fixture;
    EXPECT_FALSE(a.response.contains("patch")) << fixture;
  }
}

TEST(Review, SaysInTheTrailWhyItPlansNothing) {
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  const std::pair<const char*, std::string> cases[] = {
      {"tests/fixtures/gpu/kubectl-pod-status-subresource.json",
       "subresource status: not planned, only the object is"},
      {"tests/fixtures/gpu/kubectl-deployment-update-same-gpu.json",
       "/spec/template/spec: UPDATE with the same GPU ask: not planned again"},
      {"tests/fixtures/admission/wrapped-pod-delete-with-oldobject.json",
       "not a CREATE or UPDATE: not planned"},
      {"tests/fixtures/admission/ome-inferenceservice-create.json",
       "kind ome.io/InferenceService: not planned: not a Pod or a built-in workload, and no "
       "policy workloads entry names it"},
  };
  for (const auto& [fixture, why] : cases) {
    auto r = Review(ReadSourceFile(fixture), s, Policy{});
    ASSERT_TRUE(r.ok()) << fixture;
    EXPECT_EQ(r.value().trail, std::vector<std::string>{why}) << fixture;
  }
}

TEST(Review, TemplateUpdateThatChangesTheGpuAskIsPlanned) {
  Answer a =
      ReviewOf(ReadSourceFile("tests/fixtures/gpu/kubectl-deployment-update-gpu-changed.json"),
               SnapshotOf(Exhausted2g()));
  EXPECT_EQ(a.patch.size(), 5u);
}

TEST(Review, ExemptNamespacesPassUntouched) {
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  review["request"]["namespace"] = "kube-system";
  EXPECT_FALSE(ReviewOf(review.dump(), SnapshotOf(Exhausted2g())).response.contains("patch"));
}

TEST(Review, V1Beta1ReviewsAreAnsweredInV1Beta1) {
  auto r = Review(ReadSourceFile("tests/fixtures/gpu/kubectl-pod-v1beta1.json"),
                  SnapshotOf(Exhausted2g()), Policy{});
  ASSERT_TRUE(r.ok());
  json out = json::parse(r.value().body);
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1beta1");
  EXPECT_EQ(out["response"]["patchType"], "JSONPatch");
}

TEST(Review, ObjectsItCannotReadFailOpenWithAWarning) {
  for (const char* fixture : {"tests/fixtures/bad/object-wrong-type.json",
                              "tests/fixtures/bad/object-containers-not-array.json",
                              "tests/fixtures/bad/resources-weird.json"}) {
    Answer a = ReviewOf(ReadSourceFile(fixture), SnapshotOf(Exhausted2g()));
    EXPECT_EQ(a.response["allowed"], true) << fixture;
    EXPECT_FALSE(a.response.contains("patch")) << fixture;
  }
  Answer wrong = ReviewOf(ReadSourceFile("tests/fixtures/bad/object-wrong-type.json"),
                          SnapshotOf(DemoCluster()));
  EXPECT_EQ(wrong.response["warnings"],
            json::array({"gpuadmit could not decide and let the object pass unchanged: the Pod "
                         "object is not a JSON object"}));
}

TEST(Review, EveryRecordedAdmissionFixtureGetsAValidAnswer) {
  InventorySnapshot s = SnapshotOf(DemoCluster());
  for (const char* fixture :
       {"v1-deployment-create-kubernetes-admin-minimal.json",
        "v1-pod-create-kubernetes-admin-privileged.json",
        "v1-pod-create-kubernetes-admin-unprivileged.json", "v1-pod-create-sleep-100ms.json",
        "v1beta1-deployment-create-minikube-linkerd-inject-enabled.json",
        "v1beta1-deployment-create-minikube-no-annotation.json", "wrapped-cronjob-create.json",
        "wrapped-daemonset-create.json",
        "wrapped-deployment-update-kubectl-patch-with-oldobject.json",
        "wrapped-pod-create-by-replicaset-controller.json", "wrapped-statefulset-create.json"}) {
    std::string body = ReadSourceFile(std::string("tests/fixtures/admission/") + fixture);
    Answer a = ReviewOf(body, s);
    EXPECT_EQ(a.response["uid"], json::parse(body)["request"]["uid"]) << fixture;
    EXPECT_EQ(a.response["allowed"], true) << fixture;
    EXPECT_FALSE(a.response.contains("patch")) << fixture;  // none asks for a GPU
  }
}

}  // namespace
}  // namespace gpuadmit
