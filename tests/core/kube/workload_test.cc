#include "core/kube/workload.h"

#include <gtest/gtest.h>

#include "core/admission/admission.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

std::vector<std::string> SpecPaths(const std::string& fixture) {
  auto review = DecodeAdmissionReview(testing::ReadSourceFile(fixture));
  EXPECT_TRUE(review.ok()) << fixture;
  auto found = FindPodSpecs(review.value().kind, review.value().object);
  EXPECT_TRUE(found.ok()) << fixture;
  std::vector<std::string> paths;
  for (const PodSpecLocation& at : found.value()) {
    paths.push_back(at.spec + " " + at.metadata);
  }
  return paths;
}

TEST(FindPodSpecs, FindsThePodSpecOfEveryBuiltInKind) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SpecPaths("tests/fixtures/gpu/kubectl-pod.json"), V({"/spec /metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/gpu/kubectl-deployment.json"),
            V({"/spec/template/spec /spec/template/metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/admission/wrapped-replicaset-create.json"),
            V({"/spec/template/spec /spec/template/metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/admission/wrapped-statefulset-create.json"),
            V({"/spec/template/spec /spec/template/metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/admission/wrapped-daemonset-create.json"),
            V({"/spec/template/spec /spec/template/metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/gpu/kubectl-job.json"),
            V({"/spec/template/spec /spec/template/metadata"}));
  EXPECT_EQ(SpecPaths("tests/fixtures/gpu/kubectl-cronjob.json"),
            V({"/spec/jobTemplate/spec/template/spec /spec/jobTemplate/spec/template/metadata"}));
}

TEST(FindPodSpecs, UnknownKindsAndMissingTemplatesHaveNone) {
  EXPECT_TRUE(FindPodSpecs({"", "v1", "ConfigMap"}, json::object()).value().empty());
  EXPECT_TRUE(FindPodSpecs({"example.com", "v1", "Deployment"}, json::object()).value().empty());
  EXPECT_TRUE(
      FindPodSpecs({"apps", "v1", "Deployment"}, json{{"spec", json::object()}}).value().empty());
}

TEST(FindPodSpecs, ObjectsOfTheWrongShapeAreErrors) {
  auto not_object = FindPodSpecs({"", "v1", "Pod"}, json("hello"));
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().message, "the Pod object is not a JSON object");
  auto spec_string = FindPodSpecs({"", "v1", "Pod"}, json{{"spec", "x"}});
  ASSERT_FALSE(spec_string.ok());
  EXPECT_EQ(spec_string.error().message, "Pod /spec is not an object");
}

CustomWorkload OmeInferenceService() {
  return {"ome.io", "InferenceService", {"/spec/engine", "/spec/decoder"}, "runner", "/metadata"};
}

TEST(FindPodSpecs, FindsEveryPodSpecOfACustomWorkloadThePolicyNames) {
  auto review = DecodeAdmissionReview(
      testing::ReadSourceFile("tests/fixtures/admission/ome-inferenceservice-create.json"));
  ASSERT_TRUE(review.ok());
  const CustomWorkload ome[] = {OmeInferenceService()};
  EXPECT_TRUE(IsKnownKind(review.value().kind, ome));
  EXPECT_FALSE(IsKnownKind(review.value().kind));
  auto found = FindPodSpecs(review.value().kind, review.value().object, ome);
  ASSERT_TRUE(found.ok());
  std::vector<std::string> paths;
  for (const PodSpecLocation& at : found.value()) {
    paths.push_back(at.spec + " " + at.metadata + " " + at.gpu_container +
                    (at.is_pod ? " pod" : ""));
  }
  EXPECT_EQ(paths, std::vector<std::string>(
                       {"/spec/engine /metadata runner", "/spec/decoder /metadata runner"}));
  // Without the policy entry the kind is unknown: nothing to plan.
  EXPECT_TRUE(FindPodSpecs(review.value().kind, review.value().object).value().empty());
}

TEST(FindPodSpecs, ACustomWorkloadMatchesOnGroupAndKindInAnyVersion) {
  const CustomWorkload ome[] = {OmeInferenceService()};
  json object = {{"spec", {{"engine", json::object()}}}};
  EXPECT_EQ(FindPodSpecs({"ome.io", "v1", "InferenceService"}, object, ome).value().size(), 1u);
  EXPECT_TRUE(FindPodSpecs({"serving.kserve.io", "v1beta1", "InferenceService"}, object, ome)
                  .value()
                  .empty());
  // A built-in kind is read the built-in way whatever the policy says.
  const CustomWorkload pods[] = {{"", "Pod", {"/spec/x"}, "", "/metadata"}};
  auto pod = FindPodSpecs({"", "v1", "Pod"}, json{{"spec", json::object()}}, pods);
  ASSERT_EQ(pod.value().size(), 1u);
  EXPECT_EQ(pod.value()[0].spec, "/spec");
}

TEST(FindPodSpecs, ACustomPodSpecThatIsNotAnObjectOrABadPointerIsAnError) {
  const CustomWorkload ome[] = {OmeInferenceService()};
  auto not_object = FindPodSpecs({"ome.io", "v1beta1", "InferenceService"},
                                 json{{"spec", {{"engine", "x"}}}}, ome);
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().message, "InferenceService /spec/engine is not an object");
  const CustomWorkload bad[] = {{"ome.io", "InferenceService", {"spec/engine"}, "", "/metadata"}};
  auto bad_pointer =
      FindPodSpecs({"ome.io", "v1beta1", "InferenceService"}, json{{"spec", json::object()}}, bad);
  ASSERT_FALSE(bad_pointer.ok());
  EXPECT_EQ(bad_pointer.error().message,
            "policy workload InferenceService: bad pod spec pointer spec/engine");
  const CustomWorkload bad_metadata[] = {
      {"ome.io", "InferenceService", {"/spec/engine"}, "", "/meta~2data"}};
  auto bad_metadata_pointer =
      FindPodSpecs({"ome.io", "v1beta1", "InferenceService"},
                   json{{"spec", {{"engine", json::object()}}}}, bad_metadata);
  ASSERT_FALSE(bad_metadata_pointer.ok());
  EXPECT_EQ(bad_metadata_pointer.error().message,
            "policy workload InferenceService: bad metadata pointer");
}

TEST(FindPodSpecs, ACustomPointerWithEscapesIsKeptAsWritten) {
  const CustomWorkload escaped[] = {
      {"example.com", "Runner", {"/spec/pods~1main"}, "", "/spec/pods~1main~0meta"}};
  auto found = FindPodSpecs({"example.com", "v1", "Runner"},
                            json{{"spec", {{"pods/main", json::object()}}}}, escaped);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found.value().size(), 1u);
  EXPECT_EQ(found.value()[0].spec, "/spec/pods~1main");
  EXPECT_EQ(found.value()[0].metadata, "/spec/pods~1main~0meta");
}

}  // namespace
}  // namespace gpuadmit
