// MergePatchPod: the apiserver's rules for a merge patch to a pod, without HTTP.
#include "tests/fakes/fake_pod_update.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::MergePatchPod;
using testing::PodUpdate;

// A pod held by two gates, with a node selector, a toleration and one required term.
json GatedPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "team-a", "resourceVersion": "41"},
    "spec": {
      "schedulingGates": [{"name": "gpuadmit.io/capacity"}, {"name": "x.io/quota"}],
      "nodeSelector": {"pool": "gpu"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
          {"key": "gpu.model", "operator": "In", "values": ["A100"]}]}]}}},
      "containers": [{"name": "main", "image": "trainer:1",
                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    },
    "status": {"phase": "Pending"}
  })");
}

json UngatedPod() {
  json pod = GatedPod();
  pod["spec"].erase("schedulingGates");
  return pod;
}

PodUpdate Apply(const json& stored, const std::string& patch) {
  return MergePatchPod(stored, patch);
}

// The field of the first cause of a 422.
std::string FirstCauseField(const PodUpdate& update) {
  return update.body["details"]["causes"][0].value("field", "");
}

TEST(MergePatchPod, RemovingOneGateKeepsTheOtherAndIsAChange) {
  PodUpdate update = Apply(GatedPod(), R"({"spec":{"schedulingGates":[{"name":"x.io/quota"}]}})");
  json expected = GatedPod();
  expected["spec"]["schedulingGates"] = json::parse(R"([{"name":"x.io/quota"}])");
  EXPECT_EQ(update.status, 200);
  EXPECT_TRUE(update.changed);
  EXPECT_EQ(update.body, expected);  // the stored resourceVersion: a new one is the caller's
}

TEST(MergePatchPod, PatchThatChangesNothingIsNotAChange) {
  PodUpdate update = Apply(GatedPod(), R"({"metadata":{"resourceVersion":"41"},"spec":{}})");
  EXPECT_EQ(update.status, 200);
  EXPECT_FALSE(update.changed);
  EXPECT_EQ(update.body, GatedPod());
}

TEST(MergePatchPod, NullResourceVersionIsUnconditionalAndStatusIsNotPatched) {
  PodUpdate update = Apply(GatedPod(), R"({"metadata":{"resourceVersion":null},
      "status":{"phase":"Running"},"spec":{"schedulingGates":null}})");
  json expected = GatedPod();
  expected["spec"].erase("schedulingGates");
  EXPECT_EQ(update.status, 200);
  EXPECT_EQ(update.body, expected);
}

TEST(MergePatchPod, StaleResourceVersionIs409BeforeAnyValidation) {
  PodUpdate update =
      Apply(GatedPod(), R"({"metadata":{"resourceVersion":"40"},"spec":{"nodeName":"gpu-a"}})");
  EXPECT_EQ(update.status, 409);
  EXPECT_EQ(update.body["reason"], "Conflict");
}

TEST(MergePatchPod, ReAddingALiftedGateIsForbidden) {
  PodUpdate update = Apply(UngatedPod(), R"({"spec":{"schedulingGates":[{"name":"a.io/b"}]}})");
  EXPECT_EQ(update.status, 422);
  EXPECT_EQ(update.body["message"],
            "Pod \"train-0\" is invalid: spec.schedulingGates[0].name: Forbidden: only deletion "
            "is allowed, but found new scheduling gate 'a.io/b'");
}

TEST(MergePatchPod, GatedPodsNodeSelectorMayGainEntriesButNotChangeThem) {
  PodUpdate added = Apply(GatedPod(), R"({"spec":{"nodeSelector":{"zone":"a"}}})");
  EXPECT_EQ(added.status, 200);
  EXPECT_EQ(added.body["spec"]["nodeSelector"], json({{"pool", "gpu"}, {"zone", "a"}}));

  PodUpdate changed = Apply(GatedPod(), R"({"spec":{"nodeSelector":{"pool":"cpu"}}})");
  EXPECT_EQ(changed.status, 422);
  EXPECT_EQ(FirstCauseField(changed), "spec.nodeSelector");
  EXPECT_EQ(changed.body["details"]["causes"][0]["message"],
            R"(Invalid value: {"pool":"cpu"}: only additions to spec.nodeSelector are allowed )"
            "(no mutations or deletions)");

  PodUpdate ungated = Apply(UngatedPod(), R"({"spec":{"nodeSelector":{"zone":"a"}}})");
  EXPECT_EQ(ungated.status, 422);
  EXPECT_EQ(FirstCauseField(ungated), "spec");
}

TEST(MergePatchPod, GatedPodsTermMayGainARequirementButNotChangeOne) {
  const std::string terms = R"({"spec":{"affinity":{"nodeAffinity":{
      "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
        {"key":"gpu.model","operator":"In","values":[%s]}%s]}]}}}}})";
  auto patch = [&](const std::string& models, const std::string& added) {
    std::string p = terms;
    p.replace(p.find("%s"), 2, models);
    p.replace(p.find("%s"), 2, added);
    return p;
  };
  const std::string hostname =
      R"(,{"key":"kubernetes.io/hostname","operator":"In","values":["gpu-a"]})";
  PodUpdate narrowed = Apply(GatedPod(), patch(R"("A100")", hostname));
  EXPECT_EQ(narrowed.status, 200) << narrowed.body;

  PodUpdate mutated = Apply(GatedPod(), patch(R"("H100")", hostname));
  EXPECT_EQ(mutated.status, 422);
  EXPECT_EQ(FirstCauseField(mutated),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            "nodeSelectorTerms[0]");

  PodUpdate same = Apply(GatedPod(), patch(R"("A100")", ""));
  EXPECT_EQ(same.status, 200);
  EXPECT_FALSE(same.changed);
}

TEST(MergePatchPod, NodeAffinityMayBeSetFreelyWhenTheGatedPodHadNone) {
  json stored = GatedPod();
  stored["spec"].erase("affinity");
  PodUpdate update = Apply(stored, R"({"spec":{"schedulingGates":null,"affinity":{"nodeAffinity":{
      "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["a"]}]},
        {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["b"]}]}
      ]}}}}})");
  EXPECT_EQ(update.status, 200) << update.body;
}

TEST(MergePatchPod, RemovingTheRequiredNodeAffinityIsADeletionOfItsTerms) {
  PodUpdate update = Apply(GatedPod(), R"({"spec":{"affinity":null}})");
  EXPECT_EQ(update.status, 422);
  EXPECT_EQ(FirstCauseField(update),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            "nodeSelectorTerms");
}

TEST(MergePatchPod, ImagesAndNewTolerationsMayChangeOtherSpecFieldsMayNot) {
  PodUpdate image = Apply(UngatedPod(), R"({"spec":{"containers":[{"name":"main",
      "image":"trainer:2","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})");
  EXPECT_EQ(image.status, 200) << image.body;

  PodUpdate toleration = Apply(UngatedPod(), R"({"spec":{"tolerations":[
      {"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},
      {"key":"spot","operator":"Exists"}]}})");
  EXPECT_EQ(toleration.status, 200) << toleration.body;

  PodUpdate dropped = Apply(UngatedPod(), R"({"spec":{"tolerations":null}})");
  EXPECT_EQ(dropped.status, 422);
  EXPECT_EQ(FirstCauseField(dropped), "spec.tolerations");

  PodUpdate resources = Apply(GatedPod(), R"({"spec":{"containers":[{"name":"main",
      "image":"trainer:1","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})");
  EXPECT_EQ(resources.status, 422);
  EXPECT_EQ(FirstCauseField(resources), "spec");
}

TEST(MergePatchPod, SeveralErrorsAreListedInOneMessage) {
  PodUpdate update =
      Apply(GatedPod(), R"({"spec":{"schedulingGates":[{"name":"a.io/b"}],"nodeName":"gpu-a"}})");
  EXPECT_EQ(update.status, 422);
  ASSERT_EQ(update.body["details"]["causes"].size(), 2u);
  std::string message = update.body["message"];
  EXPECT_EQ(message.rfind("Pod \"train-0\" is invalid: [spec.schedulingGates[0].name: ", 0), 0u)
      << message;
  EXPECT_EQ(message.back(), ']');
}

TEST(MergePatchPod, BodiesThatAreNotAPatchOfThisPodAre400) {
  EXPECT_EQ(Apply(GatedPod(), "not json").status, 400);
  EXPECT_EQ(Apply(GatedPod(), "[]").status, 400);
  EXPECT_EQ(Apply(GatedPod(), R"({"metadata":{"name":"other"}})").body["message"],
            "the name of the object (other) does not match the name on the URL (train-0)");
  EXPECT_EQ(Apply(GatedPod(), R"({"metadata":{"namespace":"team-b"}})").status, 400);
}

}  // namespace
}  // namespace gpuadmit
