// The placement patch: node affinity merged into what the pod says (required terms ORed,
// expressions in a term ANDed), missing parents created, tolerations and /dev/shm added where
// missing; every patch applied and patched again to prove it idempotent.
#include "core/admission/placement_patch.h"

#include <gtest/gtest.h>

#include "core/admission/mutations.h"
#include "core/admission/review.h"
#include "core/plan/placement.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

NodeSelectorRequirement Host(const std::string& node) {
  return {"kubernetes.io/hostname", "In", {node}, false};
}

PodSpecLocation PodAt() { return {"/spec", "/metadata", true}; }

json Pod(json spec) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  json base = {
      {"containers", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}};
  if (spec.is_object()) base.update(spec);
  pod["spec"] = base;
  return pod;
}

// The ops for `d` on `object`; applies them and checks that patching the result gives none.
json PatchOf(const json& object, const Decision& d, const PodSpecLocation& at = PodAt()) {
  JsonPatch patch;
  AppendPlacementPatch(object, at, d, patch);
  json ops = patch.ToJson();
  json patched = object.patch(ops);
  JsonPatch again;
  AppendPlacementPatch(patched, at, d, again);
  EXPECT_EQ(again.ToJson(), json::array()) << "not idempotent after " << ops.dump();
  return ops;
}

Decision Preferred(const std::string& node, int weight = 100) {
  Decision d;
  d.preferred.push_back({weight, {Host(node)}});
  return d;
}

Decision Required(const std::string& node) {
  Decision d;
  d.required.push_back(Host(node));
  return d;
}

TEST(PlacementPatch, NoAffinityGetsTheWholeAffinityInOneOperation) {
  EXPECT_EQ(PatchOf(Pod({}), Preferred("gpu-a")), json::parse(R"([{"op": "add",
    "path": "/spec/affinity", "value": {"nodeAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                              "values": ["gpu-a"]}]}}]}}}])"));
  Decision both = Required("gpu-a");
  both.preferred.push_back({50, {{"nvidia.com/gpu.product", "In", {"A100", "A100-80GB"}}}});
  EXPECT_EQ(PatchOf(Pod({}), both), json::parse(R"([{"op": "add", "path": "/spec/affinity",
    "value": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                              "values": ["gpu-a"]}]}]},
      "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {
        "matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                              "values": ["A100", "A100-80GB"]}]}}]}}}])"));
}

TEST(PlacementPatch, PodAntiAffinityAloneGetsANodeAffinityBesideIt) {
  json pod = Pod({{"affinity", {{"podAntiAffinity", {{"x", 1}}}}}});
  json ops = PatchOf(pod, Required("gpu-a"));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["path"], "/spec/affinity/nodeAffinity");
  EXPECT_EQ(pod.patch(ops)["spec"]["affinity"]["podAntiAffinity"], json({{"x", 1}}));
}

TEST(PlacementPatch, ARequiredExpressionIsAndedIntoEveryTermThatHasAny) {
  json pod = Pod(json::parse(R"({"affinity": {"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-a"]}]},
      {},
      {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                             "values": ["gpu-a"]}]}]}}}})"));
  EXPECT_EQ(PatchOf(pod, Required("gpu-a")), json::parse(R"([
    {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/-",
     "value": {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-a"]}},
    {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions",
     "value": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-a"]}]}])"));
}

TEST(PlacementPatch, MissingRequiredPartsAreCreated) {
  json no_required = Pod(json::parse(R"({"affinity": {"nodeAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": []}}})"));
  EXPECT_EQ(PatchOf(no_required, Required("n")), json::parse(R"([{"op": "add",
    "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
    "value": {"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n"]}]}]}}])"));
  json no_terms = Pod(json::parse(R"({"affinity": {"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {}}}})"));
  EXPECT_EQ(PatchOf(no_terms, Required("n")), json::parse(R"([{"op": "add",
    "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
    "value": [{"matchExpressions": [
      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n"]}]}]}])"));
}

TEST(PlacementPatch, ExistingPreferredTermsAreKeptAndAnIdenticalOneIsNotRepeated) {
  json pod = Pod(json::parse(R"({"affinity": {"nodeAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
      {"weight": 5, "preference": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}},
      {"weight": 100, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-b"]}]}}]}}})"));
  EXPECT_EQ(PatchOf(pod, Preferred("gpu-b")), json::array());
  EXPECT_EQ(PatchOf(pod, Preferred("gpu-a")), json::parse(R"([{"op": "add",
    "path": "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-",
    "value": {"weight": 100, "preference": {"matchExpressions": [
      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-a"]}]}}}])"));
  // Same expression, another weight: a term of its own.
  EXPECT_EQ(PatchOf(pod, Preferred("gpu-b", 60)).size(), 1u);
}

TEST(PlacementPatch, TolerationsAreCreatedOrAppendedOnlyWhenAbsent) {
  Decision d;
  d.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"}, {"", "Exists", "", ""}};
  EXPECT_EQ(PatchOf(Pod({}), d), json::parse(R"([{"op": "add", "path": "/spec/tolerations",
    "value": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
               "effect": "NoSchedule"}, {"operator": "Exists"}]}])"));
  json some = Pod(json::parse(R"({"tolerations": [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]})"));
  EXPECT_EQ(PatchOf(some, d), json::parse(R"([{"op": "add", "path": "/spec/tolerations/-",
    "value": {"operator": "Exists"}}])"));
}

TEST(PlacementPatch, ShmIsOneMemoryVolumeMountedInEveryGpuContainerLackingIt) {
  json pod = Pod(json::parse(R"({
    "initContainers": [{"name": "warm", "resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}}}],
    "containers": [
      {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}},
       "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
      {"name": "log"},
      {"name": "own", "resources": {"limits": {"nvidia.com/gpu": "1"}},
       "volumeMounts": [{"name": "mine", "mountPath": "/dev/shm"}]}],
    "volumes": [{"name": "data", "emptyDir": {}}]})"));
  Decision d;
  d.shm_size = "2Gi";
  EXPECT_EQ(PatchOf(pod, d), json::parse(R"([
    {"op": "add", "path": "/spec/volumes/-", "value": {"name": "gpuadmit-shm",
      "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}},
    {"op": "add", "path": "/spec/initContainers/0/volumeMounts",
     "value": [{"name": "gpuadmit-shm", "mountPath": "/dev/shm"}]},
    {"op": "add", "path": "/spec/containers/0/volumeMounts/-",
     "value": {"name": "gpuadmit-shm", "mountPath": "/dev/shm"}}])"));
  EXPECT_EQ(PatchOf(Pod({}), d), json::parse(R"([
    {"op": "add", "path": "/spec/volumes", "value": [{"name": "gpuadmit-shm",
      "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]},
    {"op": "add", "path": "/spec/containers/0/volumeMounts",
     "value": [{"name": "gpuadmit-shm", "mountPath": "/dev/shm"}]}])"));
}

TEST(PlacementPatch, ACustomWorkloadsGpuContainerGetsTheMountToo) {
  json object = {
      {"spec",
       {{"engine",
         {{"runner", {{"name", "r"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}}}}};
  PodSpecLocation at{"/spec/engine", "/metadata", false, "runner"};
  Decision d;
  d.shm_size = "8Gi";
  json ops = PatchOf(object, d, at);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1], json::parse(R"({"op": "add", "path": "/spec/engine/runner/volumeMounts",
    "value": [{"name": "gpuadmit-shm", "mountPath": "/dev/shm"}]})"));
}

// The V100 configuration of a GPU job, as cpu and memory defaults.
std::vector<ResourceDefault> V100Resources() {
  constexpr int64_t kGiMilli = (int64_t{1} << 30) * 1000;
  return {{"requests", "cpu", "4000m", 4'000},
          {"requests", "memory", "8Gi", 8 * kGiMilli},
          {"limits", "cpu", "8000m", 8'000},
          {"limits", "memory", "16Gi", 16 * kGiMilli}};
}

TEST(PlacementPatch, ResourceDefaultsFillWhatAGpuContainerLeavesOutAndKeepRequestsUnderLimits) {
  Decision d;
  d.resource_defaults = V100Resources();
  // Limits for the GPU only: requests are added whole, cpu and memory beside the GPU's limit.
  EXPECT_EQ(PatchOf(Pod({}), d), json::parse(R"([
    {"op": "add", "path": "/spec/containers/0/resources/limits/cpu", "value": "8000m"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/memory", "value": "16Gi"},
    {"op": "add", "path": "/spec/containers/0/resources/requests",
     "value": {"cpu": "4000m", "memory": "8Gi"}}])"));
  // A container's own values stay, and no request goes above its limit nor limit below its
  // request: its 4Gi memory limit keeps the 8Gi request out, its 12 cpu request the 8 cpu limit.
  json own = Pod(json::parse(R"({"containers": [{"name": "main", "resources": {
    "limits": {"nvidia.com/gpu": "1", "memory": "4Gi"}, "requests": {"cpu": 12}}}]})"));
  EXPECT_EQ(PatchOf(own, d), json::array());
  // A container without GPUs gets nothing; one without resources gets them in one operation.
  json two = Pod(json::parse(R"({"containers": [{"name": "sidecar"},
    {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]})"));
  EXPECT_EQ(PatchOf(two, d).size(), 3u);
  EXPECT_EQ(PatchOf(two, d)[0]["path"], "/spec/containers/1/resources/limits/cpu");
}

TEST(PlacementPatch, TemplatesArePatchedInTheirTemplate) {
  json deployment = {{"spec", {{"template", {{"spec", Pod({})["spec"]}}}}}};
  PodSpecLocation at{"/spec/template/spec", "/spec/template/metadata", false};
  Decision d = Preferred("x");
  d.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule"}};
  json ops = PatchOf(deployment, d, at);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]["path"], "/spec/template/spec/affinity");
  EXPECT_EQ(ops[1], json::parse(R"({"op": "add", "path": "/spec/template/spec/tolerations",
    "value": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})"));
}

// A whole review under the seed-004 policy, with the reservation ledger: the answer applied and
// reviewed again (the apiserver's reinvocation) gives no further operations.
TEST(PlacementPatch, ReviewingAPlacedPodAgainChangesNothing) {
  using testing::GpuNode;
  json cluster = testing::ListOf({GpuNode("gpu-a", 2), GpuNode("gpu-b", 4)});
  InventorySnapshot s = testing::SnapshotOf(cluster);
  Policy policy;
  policy.sharing.enabled = false;  // the pod's own ask, as written
  policy.placement.gpu_types = {{"T4", 40}};
  policy.worker_defaults.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"}};
  policy.worker_defaults.shm_size = "2Gi";
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations view(ledger);
  for (AffinityMode mode : {AffinityMode::kPreferred, AffinityMode::kRequired}) {
    policy.placement.affinity = mode;
    std::string body = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod-whole-gpu.json");
    auto first = Review(body, s, policy, &view);
    ASSERT_TRUE(first.ok());
    json response = json::parse(first.value().body)["response"];
    json ops = testing::PatchOf(response);
    json review = json::parse(body);
    json placed = review["request"]["object"].patch(ops);
    json spec = placed["spec"];
    EXPECT_EQ(spec["tolerations"].size(), 1u);
    EXPECT_EQ(spec["volumes"][0]["name"], "gpuadmit-shm");
    json& node_affinity = spec["affinity"]["nodeAffinity"];
    if (mode == AffinityMode::kRequired) {
      EXPECT_EQ(node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                             [0]["matchExpressions"][0]["values"],
                json({"gpu-b"}));
    } else {
      EXPECT_EQ(node_affinity["preferredDuringSchedulingIgnoredDuringExecution"].size(), 2u);
    }
    review["request"]["object"] = placed;
    auto again = Review(review.dump(), s, policy, &view);
    ASSERT_TRUE(again.ok());
    json second = json::parse(again.value().body)["response"];
    EXPECT_FALSE(second.contains("patch")) << testing::PatchOf(second).dump();
  }
}

}  // namespace
}  // namespace gpuadmit
