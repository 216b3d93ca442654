#include "core/admission/mutations.h"

#include <gtest/gtest.h>

#include "core/admission/patch_path.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

Decision Fallback() {
  Decision d;
  d.swaps.push_back({"nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"});
  d.annotations.emplace_back("gpuadmit.io/fallback", "2g.20gb->1g.10gb");
  return d;
}

PodSpecLocation Template() { return {"/spec/template/spec", "/spec/template/metadata", false}; }

json Deployment(json template_metadata) {
  json d = {{"spec",
             {{"template",
               {{"spec",
                 {{"containers",
                   {{{"name", "a"},
                     {"resources", {{"limits", {{"nvidia.com/mig-2g.20gb", "1"}}}}}}}}}}}}}}};
  if (!template_metadata.is_null()) d["spec"]["template"]["metadata"] = template_metadata;
  return d;
}

json PatchFor(const json& object) {
  JsonPatch patch;
  AppendPatch(object, Template(), Fallback(), patch);
  return patch.ToJson();
}

TEST(AppendPatch, CreatesTheMetadataOfATemplateThatHasNone) {
  json ops = PatchFor(Deployment(nullptr));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/template/metadata",
      "value":{"annotations":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}}})"));
  EXPECT_EQ(Deployment(nullptr).patch(ops)["spec"]["template"]["metadata"]["annotations"],
            json({{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}));
}

TEST(AppendPatch, CreatesTheAnnotationsMapWhenMetadataHasNone) {
  json ops = PatchFor(Deployment({{"labels", {{"app", "x"}}}}));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/template/metadata/annotations",
      "value":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}})"));
}

TEST(AppendPatch, AddsOneEscapedKeyToAnExistingMapAndNothingWhenItIsAlreadyThere) {
  json ops = PatchFor(Deployment({{"annotations", {{"team", "ml"}}}}));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add",
      "path":"/spec/template/metadata/annotations/gpuadmit.io~1fallback","value":"2g.20gb->1g.10gb"})"));
  json same =
      PatchFor(Deployment({{"annotations", {{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}}}));
  EXPECT_EQ(same.size(), 2u);  // the resource swap only
  json stale = PatchFor(Deployment({{"annotations", {{"gpuadmit.io/fallback", "old"}}}}));
  EXPECT_EQ(stale.back()["value"], "2g.20gb->1g.10gb");
}

TEST(AppendPatch, AContainerAskingForBothProfilesNowAsksForTheirSum) {
  json d = Deployment(nullptr);
  d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] =
      "2";
  json patched = d.patch(PatchFor(d));
  EXPECT_EQ(patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
            json({{"nvidia.com/mig-1g.10gb", "3"}}));
}

// A Pod whose containers are given; its spec is at /spec.
json PodWith(json containers) { return {{"spec", {{"containers", std::move(containers)}}}}; }

PodSpecLocation PodSpec() { return {"/spec", "/metadata", true}; }

json PatchOf(const json& object, const Decision& d) {
  JsonPatch patch;
  AppendPatch(object, PodSpec(), d, patch);
  return patch.ToJson();
}

Decision CountTo(int64_t n, const char* container = "vllm") {
  Decision d;
  d.counts.push_back({container, "nvidia.com/gpu", n});
  return d;
}

TEST(AppendPatchCounts, CreatesMissingResourcesAndLimitsMaps) {
  json bare = PodWith({{{"name", "vllm"}}});
  EXPECT_EQ(PatchOf(bare, CountTo(4)), json::parse(R"([{"op":"add",
      "path":"/spec/containers/0/resources","value":{"limits":{"nvidia.com/gpu":"4"}}}])"));
  json requests_only = PodWith({{{"name", "vllm"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}});
  EXPECT_EQ(PatchOf(requests_only, CountTo(4)), json::parse(R"([{"op":"add",
      "path":"/spec/containers/0/resources/limits","value":{"nvidia.com/gpu":"4"}}])"));
}

TEST(AppendPatchCounts, SetsLimitsAndTheRequestsThatNameTheResourceOfTheNamedContainerOnly) {
  json pod = PodWith(json::parse(R"([
    {"name": "proxy", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
    {"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": "4"},
                                   "requests": {"nvidia.com/gpu": "2", "cpu": "4"}}}])"));
  json ops = PatchOf(pod, CountTo(4));
  EXPECT_EQ(ops, json::parse(R"([
    {"op":"add","path":"/spec/containers/1/resources/limits/nvidia.com~1gpu","value":"4"},
    {"op":"add","path":"/spec/containers/1/resources/requests/nvidia.com~1gpu","value":"4"}])"));
  json patched = pod.patch(ops);
  EXPECT_EQ(patched["spec"]["containers"][1]["resources"]["limits"],
            json({{"nvidia.com/gpu", "4"}, {"cpu", "4"}}));
  EXPECT_EQ(PatchOf(patched, CountTo(4)), json::array());  // idempotent
}

TEST(AppendPatchCounts, FindsInitContainersAndACustomWorkloadsRunner) {
  json pod = {{"spec",
               {{"initContainers", {{{"name", "warm"}}}},
                {"containers", {{{"name", "main"}}}},
                {"runner", {{"name", "ome"}, {"resources", {{"limits", json::object()}}}}}}}};
  EXPECT_EQ(PatchOf(pod, CountTo(1, "warm"))[0]["path"], "/spec/initContainers/0/resources");
  PodSpecLocation at = PodSpec();
  at.gpu_container = "runner";
  JsonPatch patch;
  AppendPatch(pod, at, CountTo(2, "ome"), patch);
  EXPECT_EQ(patch.ToJson(), json::parse(R"([{"op":"add",
      "path":"/spec/runner/resources/limits/nvidia.com~1gpu","value":"2"}])"));
  EXPECT_EQ(PatchOf(pod, CountTo(2, "absent")), json::array());
}

TEST(AppendPatchCounts, ACountChangeThenASwapOfTheSameResourceGivesValidOps) {
  struct Case {
    json container;
    json resources;  // after the patch
  } cases[] = {
      {{{"name", "vllm"}}, {{"limits", {{"nvidia.com/gpu.shared", "1"}}}}},
      {{{"name", "vllm"},
        {"resources",
         {{"limits", {{"nvidia.com/gpu", "2"}}}, {"requests", {{"nvidia.com/gpu", "2"}}}}}},
       {{"limits", {{"nvidia.com/gpu.shared", "1"}}},
        {"requests", {{"nvidia.com/gpu.shared", "1"}}}}},
  };
  for (const Case& c : cases) {
    json pod = PodWith({c.container});
    Decision d = CountTo(1);
    d.swaps.push_back({"nvidia.com/gpu", "nvidia.com/gpu.shared"});
    json ops = PatchOf(pod, d);
    json patched = pod.patch(ops);  // throws if an op does not apply
    EXPECT_EQ(patched["spec"]["containers"][0]["resources"], c.resources) << ops.dump();
    Decision again;
    again.swaps = d.swaps;  // what a re-review decides: no count change, nothing left to swap
    EXPECT_EQ(PatchOf(patched, again), json::array());
  }
}

TEST(AppendPatchNodeSelector, CreatesTheMapAddsMissingKeysAndLeavesMatchingOnes) {
  Decision d;
  d.node_selector = {{"nvidia.com/gpu.sharing-strategy", "mps"}};
  EXPECT_EQ(PatchOf(PodWith(json::array()), d), json::parse(R"([{"op":"add",
      "path":"/spec/nodeSelector","value":{"nvidia.com/gpu.sharing-strategy":"mps"}}])"));
  json pod = PodWith(json::array());
  pod["spec"]["nodeSelector"] = {{"pool", "a"}};
  EXPECT_EQ(PatchOf(pod, d), json::parse(R"([{"op":"add",
      "path":"/spec/nodeSelector/nvidia.com~1gpu.sharing-strategy","value":"mps"}])"));
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.sharing-strategy"] = "mps";
  EXPECT_EQ(PatchOf(pod, d), json::array());
}

TEST(AppendPatchSchedulingGate, CreatesTheListAppendsToOneAndNeverAddsItTwice) {
  Decision d;
  d.scheduling_gate = "gpuadmit.io/capacity";
  json pod = PodWith(json::array());
  EXPECT_EQ(PatchOf(pod, d), json::parse(R"([{"op":"add","path":"/spec/schedulingGates",
      "value":[{"name":"gpuadmit.io/capacity"}]}])"));
  pod["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  json ops = PatchOf(pod, d);
  EXPECT_EQ(ops, json::parse(R"([{"op":"add","path":"/spec/schedulingGates/-",
      "value":{"name":"gpuadmit.io/capacity"}}])"));
  json patched = pod.patch(ops);
  EXPECT_EQ(patched["spec"]["schedulingGates"],
            json::parse(R"([{"name":"example.com/quota"},{"name":"gpuadmit.io/capacity"}])"));
  EXPECT_EQ(PatchOf(patched, d), json::array());
  EXPECT_EQ(PatchOf(pod, Decision{}), json::array());  // no gate decided: none added
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(PatchPath, WritesWhatJsonPointerWritesForTheSameTokens) {
  nlohmann::json::json_pointer spec("/spec/template/spec");
  PatchPath at = PatchPath(spec.to_string()) / "containers" / size_t{3} / "resources" / "limits" /
                 "nvidia.com/mig-1g.10gb" / "a~b" / "";
  nlohmann::json::json_pointer same =
      spec / "containers" / "3" / "resources" / "limits" / "nvidia.com/mig-1g.10gb" / "a~b" / "";
  EXPECT_EQ(at.str(), same.to_string());
  EXPECT_EQ(at.str(),
            "/spec/template/spec/containers/3/resources/limits/nvidia.com~1mig-1g.10gb/a~0b/");
  EXPECT_EQ(PatchPath().str(), "");
  EXPECT_EQ((PatchPath() / "metadata").str(), "/metadata");
}

}  // namespace
}  // namespace gpuadmit
