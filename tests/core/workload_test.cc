#include "core/workload.h"

#include <gtest/gtest.h>

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
    paths.push_back(at.spec.to_string() + " " + at.metadata.to_string());
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

}  // namespace
}  // namespace gpuadmit
