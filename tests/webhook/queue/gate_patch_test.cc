#include "webhook/queue/gate_patch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "webhook/queue/queue_event.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr const char* kGate = "gpuadmit.io/capacity";
const std::pair<std::string, std::string> kNote = {"gpuadmit.io/queue", "lifted: capacity"};

json Pod(json spec) {
  return {{"metadata",
           {{"name", "train-0"}, {"namespace", "ml"}, {"uid", "u-1"}, {"resourceVersion", "41"}}},
          {"spec", std::move(spec)}};
}

TEST(GatePatch, HasGate) {
  json pod = Pod({{"schedulingGates", {{{"name", "other.io/x"}}, {{"name", kGate}}}}});
  EXPECT_TRUE(HasGate(pod, kGate));
  EXPECT_FALSE(HasGate(pod, "gpuadmit.io/other"));
  EXPECT_FALSE(HasGate(Pod(json::object()), kGate));
}

TEST(GatePatch, RemovesOnlyOurGateAndKeepsTheOthers) {
  json pod = Pod({{"schedulingGates", {{{"name", "other.io/x"}}, {{"name", kGate}}}}});
  json patch = LiftPatch(pod, kGate, kNote, "");
  EXPECT_EQ(patch["spec"]["schedulingGates"], json::parse(R"([{"name":"other.io/x"}])"));
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "41");
  EXPECT_EQ(patch["metadata"]["annotations"]["gpuadmit.io/queue"], "lifted: capacity");
  EXPECT_FALSE(patch["spec"].contains("affinity"));  // no node: no pin
}

TEST(GatePatch, TheLastGateRemovesTheField) {
  json pod = Pod({{"schedulingGates", {{{"name", kGate}}}}});
  json patch = LiftPatch(pod, kGate, kNote, "");
  ASSERT_TRUE(patch["spec"].contains("schedulingGates"));
  EXPECT_TRUE(patch["spec"]["schedulingGates"].is_null());
  // Applied as the apiserver applies a merge patch: the field is gone.
  json merged = pod;
  merged.merge_patch(patch);
  EXPECT_FALSE(merged["spec"].contains("schedulingGates"));
}

TEST(GatePatch, PinsANodeAsTheOnlyTermWhenThePodHasNone) {
  json pod = Pod({{"schedulingGates", {{{"name", kGate}}}}});
  json patch = LiftPatch(pod, kGate, kNote, "gpu-a");
  EXPECT_EQ(
      patch["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
      json::parse(R"({"nodeSelectorTerms":[{"matchFields":[
              {"key":"metadata.name","operator":"In","values":["gpu-a"]}]}]})"));
}

TEST(GatePatch, AndsThePinIntoEveryExistingTermKeepingWhatTheyHad) {
  json terms = json::parse(R"([
    {"matchExpressions":[{"key":"gpu","operator":"In","values":["h100"]}]},
    {"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["bad"]}]}])");
  json pod =
      Pod({{"schedulingGates", {{{"name", kGate}}}},
           {"affinity",
            {{"nodeAffinity",
              {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}},
               {"preferredDuringSchedulingIgnoredDuringExecution", json::array()}}}}}});
  json patch = LiftPatch(pod, kGate, kNote, "gpu-b");
  json merged = pod;
  merged.merge_patch(patch);
  const json& got = merged["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(got.size(), 2u);
  json pin = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"gpu-b"}}};
  // Additions only: each old term's requirements come first, unchanged.
  EXPECT_EQ(got[0]["matchExpressions"], terms[0]["matchExpressions"]);
  EXPECT_EQ(got[0]["matchFields"], json::array({pin}));
  EXPECT_EQ(got[1]["matchFields"][0], terms[1]["matchFields"][0]);
  EXPECT_EQ(got[1]["matchFields"][1], pin);
  // The preferred terms are not in the patch, so the merge keeps them.
  EXPECT_TRUE(merged["spec"]["affinity"]["nodeAffinity"].contains(
      "preferredDuringSchedulingIgnoredDuringExecution"));
}

TEST(GatePatch, PodPath) {
  EXPECT_EQ(PodPath("ml", "train-0"), "/api/v1/namespaces/ml/pods/train-0");
}

TEST(QueueEvent, ReferencesThePodAndSaysWhy) {
  json pod = Pod(json::object());
  // 2026-11-26T08:00:00Z
  json event = QueueEvent(pod, "CapacityWaitTimedOut", "waited 300s", "gpuadmit-0", 1795680000000);
  EXPECT_EQ(event["kind"], "Event");
  EXPECT_EQ(event["metadata"]["namespace"], "ml");
  EXPECT_EQ(event["metadata"]["name"].get<std::string>().rfind("train-0.", 0), 0u);
  EXPECT_EQ(event["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(event["involvedObject"]["name"], "train-0");
  EXPECT_EQ(event["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(event["reason"], "CapacityWaitTimedOut");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["message"], "waited 300s");
  EXPECT_EQ(event["reportingInstance"], "gpuadmit-0");
  EXPECT_EQ(event["firstTimestamp"], "2026-11-26T08:00:00Z");
  EXPECT_EQ(event["count"], 1);
}

}  // namespace
}  // namespace gpuadmit
