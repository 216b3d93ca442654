// Stages 1 and 2 end to end through core::Review: the patch a sharing decision (and a GPU count
// filled in or corrected before it) makes, applied with nlohmann's RFC 6902 implementation, and
// the patched object reviewed again to prove it yields no further operations.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddSharedGpuNode;
using testing::DemoCluster;
using testing::PatchOf;
using testing::ReadJsonFile;
using testing::SnapshotOf;

InventorySnapshot Cluster() {
  json cluster = DemoCluster();
  AddSharedGpuNode(cluster, "gpu-mps", "mps", 2, 4);
  AddSharedGpuNode(cluster, "gpu-ts", "time-slicing", 2, 4);
  return SnapshotOf(cluster);
}

// Placement is off so that the patches hold only what stages 1 and 2 decide.
Policy SharingOnly(GpuCountAction count = GpuCountAction::kWarn) {
  Policy p;
  p.placement.enabled = false;
  p.requirements.gpu_count = count;
  return p;
}

// kubectl's whole-GPU Pod review with `container` (merged into container 0) and annotations.
json WholeGpuReview(const json& container, const json& annotations = json::object()) {
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
  json& pod = review["request"]["object"];
  pod["spec"]["containers"][0].merge_patch(container);
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return review;
}

json Ops(const json& review, const InventorySnapshot& s, const Policy& p) {
  auto r = Review(review.dump(), s, p);
  EXPECT_TRUE(r.ok());
  return PatchOf(json::parse(r.value().body)["response"]);
}

// Applies the patch, reviews the result again and expects no operations.
json PatchedAndIdempotent(const json& review, const json& ops, const InventorySnapshot& s,
                          const Policy& p) {
  json again = review;
  again["request"]["object"] = review["request"]["object"].patch(ops);
  EXPECT_EQ(Ops(again, s, p), json::array());
  return again["request"]["object"];
}

TEST(SharingReview, ASmallModelOnOneGpuMovesToTheSmallestMigProfileOnce) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  json review = WholeGpuReview({{"args", {"vllm serve facebook/opt-125m"}}});
  json ops = Ops(review, s, p);
  EXPECT_EQ(ops, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"remove","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"add","path":"/metadata/annotations","value":{
      "gpuadmit.io/applied-sharing-mode":"mig",
      "gpuadmit.io/detected-workload-type":"inference",
      "gpuadmit.io/original-request":"nvidia.com/gpu=1"}}
  ])"));
  PatchedAndIdempotent(review, ops, s, p);
}

// Issue 18: an unlabelled vLLM pod. MIG is off here, so the default flow reaches its inference
// branch, which only a workload type opens.
json UnlabelledVllm() {
  return WholeGpuReview({{"image", "vllm/vllm-openai:v0.5.0"},
                         {"args", {"--model", "mistralai/Mistral-7B-Instruct-v0.3"}}});
}

Policy SharingWithoutMig() {
  Policy p = SharingOnly();
  p.sharing.enable_mig = false;
  return p;
}

TEST(SharingReview, AnUnlabelledVllmPodIsDetectedAsInferenceMovesToMpsAndSaysSoOnce) {
  InventorySnapshot s = Cluster();
  Policy p = SharingWithoutMig();
  json review = UnlabelledVllm();
  json ops = Ops(review, s, p);
  EXPECT_EQ(ops, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu.shared","value":"1"},
    {"op":"remove","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu.shared","value":"1"},
    {"op":"add","path":"/spec/nodeSelector","value":{"nvidia.com/gpu.sharing-strategy":"mps"}},
    {"op":"add","path":"/metadata/annotations","value":{
      "gpuadmit.io/detected-workload-type":"inference",
      "gpuadmit.io/applied-sharing-mode":"mps",
      "gpuadmit.io/original-request":"nvidia.com/gpu=1"}}
  ])"));
  PatchedAndIdempotent(review, ops, s, p);

  ReviewContext context{s, p};
  context.explain = true;
  auto answer = Review(review.dump(), context);
  ASSERT_TRUE(answer.ok());
  const std::vector<std::string>& trail = answer.value().trail;
  EXPECT_NE(std::find(trail.begin(), trail.end(),
                      "workload type: inference, detected from image vllm/vllm-openai:v0.5.0"),
            trail.end())
      << ::testing::PrintToString(trail);
}

TEST(SharingReview, AWorkloadTypeLabelWinsOverDetectionAndIsNotAnnotated) {
  InventorySnapshot s = Cluster();
  Policy p = SharingWithoutMig();
  json review = UnlabelledVllm();
  review["request"]["object"]["metadata"]["labels"]["gpuadmit.io/workload-type"] = "training";
  EXPECT_EQ(Ops(review, s, p), json::array());  // training: exclusive, as asked
  review["request"]["object"]["metadata"]["labels"]["gpuadmit.io/workload-type"] = "development";
  json ops = Ops(review, s, p);
  json pod = PatchedAndIdempotent(review, ops, s, p);
  EXPECT_EQ(pod["spec"]["nodeSelector"],
            json({{"nvidia.com/gpu.sharing-strategy", "time-slicing"}}));
  EXPECT_FALSE(pod["metadata"]["annotations"].contains("gpuadmit.io/detected-workload-type"));
}

TEST(SharingReview, DetectionOffLeavesAnUnlabelledVllmPodAsBefore) {
  InventorySnapshot s = Cluster();
  Policy p = SharingWithoutMig();
  p.workload_detection.enabled = false;
  // No type: the default flow has nothing but exclusive for it.
  EXPECT_EQ(Ops(UnlabelledVllm(), s, p), json::array());
}

TEST(SharingReview, AnInferencePodMovesToAnMpsNodeOnce) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  json review = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "inference"}});
  json ops = Ops(review, s, p);
  EXPECT_EQ(ops, json::parse(R"([
    {"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu.shared","value":"1"},
    {"op":"remove","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu"},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu.shared","value":"1"},
    {"op":"add","path":"/spec/nodeSelector","value":{"nvidia.com/gpu.sharing-strategy":"mps"}},
    {"op":"add","path":"/metadata/annotations/gpuadmit.io~1applied-sharing-mode","value":"mps"},
    {"op":"add","path":"/metadata/annotations/gpuadmit.io~1original-request",
     "value":"nvidia.com/gpu=1"}
  ])"));
  PatchedAndIdempotent(review, ops, s, p);
}

TEST(SharingReview, AnMpsPodGetsThePolicysClientSettingsOnceAndKeepsItsOwn) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  p.sharing.mps_active_thread_percentage = 50;
  p.sharing.mps_memory_limit_mib = 2048;
  json review = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "inference"}});
  json ops = Ops(review, s, p);
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/containers/0/env","value":[
    {"name":"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE","value":"50"},
    {"name":"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT","value":"0=2048M"}]})"))
      << ops;
  json pod = PatchedAndIdempotent(review, ops, s, p);
  EXPECT_EQ(pod["spec"]["containers"][0]["env"].size(), 2u);

  // A container that sets one of them keeps its value and gets the other appended.
  json own = WholeGpuReview(
      {{"env", {{{"name", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {"value", "20"}}}}},
      {{"gpu-autoscaler.io/workload-type", "inference"}});
  ops = Ops(own, s, p);
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/containers/0/env/-",
    "value":{"name":"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT","value":"0=2048M"}})"))
      << ops;
  pod = PatchedAndIdempotent(own, ops, s, p);
  EXPECT_EQ(pod["spec"]["containers"][0]["env"][0]["value"], "20");

  // Time-slicing gets none of them.
  json dev = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "development"}});
  EXPECT_EQ(Ops(dev, s, p).dump().find("CUDA_MPS"), std::string::npos);
}

TEST(SharingReview, UnderOptInOnlyAPodWithSharingEnabledIsShared) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  p.sharing.opt_in = true;
  json plain = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "inference"}});
  EXPECT_EQ(Ops(plain, s, p), json::array());
  auto r = Review(plain.dump(), {s, p, nullptr, nullptr, false, true});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(std::find(r.value().trail.begin(), r.value().trail.end(),
                      "sharing: exclusive (the policy shares only pods with gpuadmit.io/sharing: "
                      "enabled)"),
            r.value().trail.end());

  json opted = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "inference"},
                                               {"gpu-autoscaler.io/sharing", "enabled"}});
  json ops = Ops(opted, s, p);
  EXPECT_NE(ops.dump().find("nvidia.com~1gpu.shared"), std::string::npos) << ops;
  PatchedAndIdempotent(opted, ops, s, p);
}

TEST(SharingReview, MessagesNameTheSharingKeyAsThePodWroteIt) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  json odd = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/workload-type", "inference"},
                                             {"gpu-autoscaler.io/sharing", "maybe"}});
  auto r = Review(odd.dump(), {s, p, nullptr, nullptr, false, true});
  ASSERT_TRUE(r.ok());
  json response = json::parse(r.value().body)["response"];
  EXPECT_EQ(response["warnings"][0],
            "gpuadmit: Pod default/gpu-pod: gpu-autoscaler.io/sharing \"maybe\" is not enabled or "
            "disabled: ignored")
      << response;
  json off = WholeGpuReview(json::object(), {{"gpu-autoscaler.io/sharing", "disabled"}});
  r = Review(off.dump(), {s, p, nullptr, nullptr, false, true});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(std::find(r.value().trail.begin(), r.value().trail.end(),
                      "sharing: gpu-autoscaler.io/sharing is \"disabled\": exclusive"),
            r.value().trail.end());
}

TEST(SharingReview, ADeploymentsTemplateIsRewrittenAndSteeredInPlace) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-deployment.json");
  json& tmpl = review["request"]["object"]["spec"]["template"];
  tmpl["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}},
                                                {"requests", {{"nvidia.com/gpu", "1"}}}};
  tmpl["metadata"]["labels"]["gpu-autoscaler.io/workload-type"] = "serving";
  json ops = Ops(review, s, p);
  json deployment = PatchedAndIdempotent(review, ops, s, p);
  const json& patched = deployment["spec"]["template"];
  EXPECT_EQ(patched["spec"]["nodeSelector"], json({{"nvidia.com/gpu.sharing-strategy", "mps"}}));
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["limits"],
            json({{"nvidia.com/gpu.shared", "1"}}));
  EXPECT_EQ(patched["metadata"]["annotations"]["gpuadmit.io/applied-sharing-mode"], "mps");
}

TEST(SharingReview, AOneGpuPodOfASeventyBModelIsNeverMovedOntoAMigSlice) {
  // 20,000 MiB per GPU is the 70B rule's figure over 4 GPUs: on one GPU the model needs all
  // 80,000 MiB, which no MIG profile (nor 2g.20gb's 20 GiB) holds.
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly();
  json review = WholeGpuReview({{"args", {"vllm", "serve", "meta-llama/Llama-3-70B"}}});
  auto r = Review(review.dump(), s, p);
  ASSERT_TRUE(r.ok());
  json ops = PatchOf(json::parse(r.value().body)["response"]);
  for (const json& op : ops) {
    EXPECT_EQ(op["path"].get<std::string>().find("nvidia.com~1mig-"), std::string::npos) << op;
  }
  EXPECT_NE(std::find(r.value().trail.begin(), r.value().trail.end(),
                      "GPU memory need 80000 MiB per GPU: model meta-llama/Llama-3-70B (args of "
                      "container gpu-pod) matches \"70b\" (20000 MiB per GPU over 4 GPUs, on "
                      "this pod's 1)"),
            r.value().trail.end());
}

TEST(SharingReview, AFilledInCountIsSwappedInTheSamePatch) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly(GpuCountAction::kFill);
  json review = WholeGpuReview({{"args", {"vllm", "serve", "facebook/opt-125m", "--tp", "1"}}});
  review["request"]["object"]["spec"]["containers"][0].erase("resources");
  json ops = Ops(review, s, p);
  json pod = PatchedAndIdempotent(review, ops, s, p);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
            json({{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}}));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpuadmit.io/original-request"], "nvidia.com/gpu=1");
}

TEST(SharingReview, ACorrectedCountIsSwappedInTheSamePatch) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly(GpuCountAction::kCorrect);
  json review = WholeGpuReview(
      {{"command", {"sh", "-c"}},
       {"args", {"python3 -m sglang.launch_server --model-path m --tp-size 1"}},
       {"resources",
        {{"limits", {{"nvidia.com/gpu", "2"}}}, {"requests", {{"nvidia.com/gpu", "2"}}}}}},
      // 40 GiB: too much for the MIG branch, which comes first.
      {{"gpuadmit.io/workload-type", "development"}, {"gpuadmit.io/gpu-memory", "40Gi"}});
  json ops = Ops(review, s, p);
  json pod = PatchedAndIdempotent(review, ops, s, p);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
            json({{"limits", {{"nvidia.com/gpu.shared", "1"}}},
                  {"requests", {{"nvidia.com/gpu.shared", "1"}}}}));
  EXPECT_EQ(pod["spec"]["nodeSelector"],
            json({{"nvidia.com/gpu.sharing-strategy", "time-slicing"}}));
}

TEST(SharingReview, ACorrectedMultiGpuCountStaysExclusiveAndIsIdempotent) {
  InventorySnapshot s = Cluster();
  Policy p = SharingOnly(GpuCountAction::kCorrect);
  json review = WholeGpuReview({{"args", {"vllm", "serve", "meta-llama/Llama-3-70B", "-tp", "4"}}},
                               {{"gpuadmit.io/workload-type", "inference"}});
  json ops = Ops(review, s, p);
  EXPECT_EQ(ops, json::parse(R"([
    {"op":"add","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"4"},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu","value":"4"}
  ])"));
  PatchedAndIdempotent(review, ops, s, p);
}

}  // namespace
}  // namespace gpuadmit
