// Claims for DRA devices through whole reviews: a MIG profile written exactly becomes a
// firstAvailable list in the fallback's order, or (dra.firstAvailable off) the profile is chosen at
// admission; multi-GPU claims kept under one PCIe root; each patch applied and reviewed again.
#include "core/admission/claim_review.h"

#include <gtest/gtest.h>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadJsonFile;
using testing::SnapshotOf;

constexpr char kProfile2g[] = "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'";

json MigSpec(const std::string& cls, const std::string& selector) {
  json exactly = {{"deviceClassName", cls}, {"count", 1}};
  if (!selector.empty()) exactly["selectors"] = json::array({{{"cel", {{"expression", selector}}}}});
  return {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", exactly}}})}}}};
}

// A CREATE review of a ResourceClaimTemplate in "ml" whose claim spec is `spec`.
json TemplateReview(const json& spec, const std::string& operation = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u-1"},
            {"kind", {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", "ResourceClaimTemplate"}}},
            {"resource", {{"group", "resource.k8s.io"}, {"version", "v1"}, {"resource", "resourceclaimtemplates"}}},
            {"namespace", "ml"},
            {"operation", operation},
            {"object",
             {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaimTemplate"},
              {"metadata", {{"name", "mig-2g"}, {"namespace", "ml"}}},
              {"spec", {{"spec", spec}}}}}}}};
}

json ResponseOf(const json& review, const InventorySnapshot& s, const Policy& p) {
  auto r = Review(review.dump(), s, p);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return json::parse(r.value().body).at("response");
}

json Patched(const json& review, const json& response) {
  json out = review;
  out["request"]["object"] = review["request"]["object"].patch(testing::PatchOf(response));
  return out;
}

void ExpectIdempotent(const json& review, const json& response, const InventorySnapshot& s,
                      const Policy& p) {
  json again = ResponseOf(Patched(review, response), s, p);
  EXPECT_FALSE(again.contains("patch")) << testing::PatchOf(again).dump();
}

// The seed cluster with every 2g.20gb claimed.
json SeedWithout2g() {
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  std::erase_if(cluster["items"].get_ref<json::array_t&>(),
                [](const json& i) { return i["kind"] == "ResourceClaim"; });
  json results = json::array();
  for (int gpu = 0; gpu < 4; ++gpu) {
    for (int start : {0, 2, 4}) {
      results.push_back({{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "h200-medium"},
                         {"device", "gpu-" + std::to_string(gpu) + "-mig-2g20gb-14-" +
                                        std::to_string(start)}});
    }
  }
  cluster["items"].push_back({{"kind", "ResourceClaim"},
                              {"metadata", {{"name", "all-2g"}, {"namespace", "ml"}}},
                              {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}});
  return cluster;
}

TEST(ClaimReview, AMigProfileBecomesAFirstAvailableListInTheFallbacksOrder) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  Policy p;
  json review = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g));
  json response = ResponseOf(review, s, p);
  json object = Patched(review, response)["request"]["object"];
  json request = object["spec"]["spec"]["devices"]["requests"][0];
  EXPECT_FALSE(request.contains("exactly"));
  EXPECT_EQ(request["name"], "gpu");
  json expected = json::array(
      {{{"name", "2g-20gb"}, {"deviceClassName", "mig.nvidia.com"}, {"count", 1},
        {"selectors", json::array({{{"cel", {{"expression", kProfile2g}}}}})}},
       {{"name", "1g-10gb"}, {"deviceClassName", "mig.nvidia.com"}, {"count", 1},
        {"selectors", json::array({{{"cel", {{"expression",
            "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}}}})}}});
  EXPECT_EQ(request["firstAvailable"], expected);
  EXPECT_EQ(object["metadata"]["annotations"]["gpuadmit.io/first-available"],
            "gpu: 2g.20gb,1g.10gb");
  ExpectIdempotent(review, response, s, p);
}

TEST(ClaimReview, ApplyingTheSameManifestAgainPatchesTheUpdateBackToTheStoredSpec) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  Policy p;
  json create = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g));
  json stored = Patched(create, ResponseOf(create, s, p))["request"]["object"];
  // kubectl apply again: the manifest as written, over the stored object.
  json update = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g), "UPDATE");
  update["request"]["oldObject"] = stored;
  json response = ResponseOf(update, s, p);
  EXPECT_EQ(Patched(update, response)["request"]["object"]["spec"], stored["spec"]);
  // A real change of the spec is the apiserver's to refuse (immutable), not gpuadmit's to undo.
  json changed = TemplateReview(
      MigSpec("mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"),
      "UPDATE");
  changed["request"]["oldObject"] = stored;
  EXPECT_FALSE(ResponseOf(changed, s, p).contains("patch"));
}

TEST(ClaimReview, WithoutFirstAvailableTheProfileIsChosenAtAdmission) {
  Policy p;
  p.dra.first_available = false;
  json review = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g));
  // 11 of 12 2g.20gb free: left as written.
  InventorySnapshot free = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  EXPECT_FALSE(ResponseOf(review, free, p).contains("patch"));
  // None free: the claim asks a 1g.10gb, and says so.
  InventorySnapshot taken = SnapshotOf(SeedWithout2g());
  json response = ResponseOf(review, taken, p);
  json object = Patched(review, response)["request"]["object"];
  json exactly = object["spec"]["spec"]["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(exactly["selectors"][0]["cel"]["expression"],
            "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'");
  EXPECT_EQ(object["metadata"]["annotations"]["gpuadmit.io/fallback"], "2g.20gb->1g.10gb");
  ASSERT_TRUE(response.contains("warnings"));
  ExpectIdempotent(review, response, taken, p);
}

TEST(ClaimReview, APerProfileClassFallsBackToTheClassOfTheNextProfile) {
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  for (const char* profile : {"2g.20gb", "1g.10gb"}) {
    cluster["items"].push_back(
        {{"kind", "DeviceClass"},
         {"metadata", {{"name", std::string("mig-") + profile}}},
         {"spec", {{"selectors", json::array({{{"cel", {{"expression",
             std::string("device.driver == 'gpu.nvidia.com' && "
                         "device.attributes['gpu.nvidia.com'].profile == '") + profile + "'"}}}}})}}}});
  }
  InventorySnapshot s = SnapshotOf(cluster);
  Policy p;
  json review = TemplateReview(MigSpec("mig-2g.20gb", ""));
  json response = ResponseOf(review, s, p);
  json list = Patched(review, response)["request"]["object"]["spec"]["spec"]["devices"]
                     ["requests"][0]["firstAvailable"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["deviceClassName"], "mig-2g.20gb");
  EXPECT_EQ(list[1]["deviceClassName"], "mig-1g.10gb");
  EXPECT_FALSE(list[1].contains("selectors"));
}

TEST(ClaimReview, OptedOutUpdatedOrAlreadyPrioritizedClaimsAreLeftAsWritten) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  Policy p;
  json opted = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g));
  opted["request"]["object"]["metadata"]["annotations"] = {{"gpuadmit.io/mig-fallback", "false"}};
  EXPECT_FALSE(ResponseOf(opted, s, p).contains("patch"));
  json update = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g), "UPDATE");
  update["request"]["oldObject"] = update["request"]["object"];
  EXPECT_FALSE(ResponseOf(update, s, p).contains("patch"));
  json spec = MigSpec("mig.nvidia.com", kProfile2g);
  json& req = spec["devices"]["requests"][0];
  req["firstAvailable"] = json::array({req["exactly"]});
  req["firstAvailable"][0]["name"] = "mine";
  req.erase("exactly");
  EXPECT_FALSE(ResponseOf(TemplateReview(spec), s, p).contains("patch"));
}

// A CREATE review of Pod ml/burst-0 whose one claim comes from the template ml/mig-2g.
json PodReview() {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "burst-0"}, {"namespace", "ml"}}},
              {"spec",
               {{"resourceClaims", json::array({{{"name", "gpu"},
                                                 {"resourceClaimTemplateName", "mig-2g"}}})},
                {"containers", json::array({{{"name", "cuda"},
                                             {"image", "cuda"},
                                             {"resources", {{"claims", json::array({{{"name", "gpu"}}})}}}}})}}}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u-pod"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"namespace", "ml"},
            {"operation", "CREATE"},
            {"object", pod}}}};
}

json WithTemplate(json cluster) {
  json t = TemplateReview(MigSpec("mig.nvidia.com", kProfile2g))["request"]["object"];
  cluster["items"].push_back(t);
  return cluster;
}

// The node the patched pod's preferred hostname term names.
std::string PreferredNode(const json& pod) {
  return pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            [0]["preference"]["matchExpressions"][0]["values"][0];
}

TEST(ClaimReview, APodNamingAClaimTemplateIsSteeredWhereItsProfileIsFreeAsDraDevices) {
  Policy p;
  json review = PodReview();
  // 2g.20gb free on h200-medium only.
  InventorySnapshot free = SnapshotOf(WithTemplate(ReadJsonFile("tests/fixtures/dra/seed-cluster.json")));
  json pod = Patched(review, ResponseOf(review, free, p))["request"]["object"];
  EXPECT_EQ(PreferredNode(pod), "h200-medium");
  EXPECT_EQ(pod["spec"]["containers"], review["request"]["object"]["spec"]["containers"]);
  // None free: where a 1g.10gb is, the allocator's second choice, said in the annotation.
  InventorySnapshot taken = SnapshotOf(WithTemplate(SeedWithout2g()));
  pod = Patched(review, ResponseOf(review, taken, p))["request"]["object"];
  EXPECT_EQ(PreferredNode(pod), "h200-small");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpuadmit.io/fallback"], "2g.20gb->1g.10gb");
  EXPECT_EQ(pod["spec"]["containers"], review["request"]["object"]["spec"]["containers"]);
}

// A node of `gpus` whole GPUs, two under each PCIe root, published by NVIDIA's driver.
json WholeGpuCluster(int gpus) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) {
    devices.push_back({{"name", "gpu-" + std::to_string(i)},
                       {"attributes", {{"type", {{"string", "gpu"}}},
                                       {"resource.kubernetes.io/pcieRoot",
                                        {{"string", "pci0000:0" + std::to_string(i / 2)}}}}}});
  }
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  cluster["items"].push_back(
      {{"kind", "ResourceSlice"},
       {"metadata", {{"name", "h200-small-gpus"}}},
       {"spec", {{"driver", "gpu.nvidia.com"}, {"nodeName", "h200-small"},
                 {"pool", {{"name", "h200-small-gpus"}, {"generation", 1}}},
                 {"devices", devices}}}});
  return cluster;
}

TEST(ClaimReview, MultiGpuClaimsAreKeptUnderOnePcieRootWhereANodeHasThatMany) {
  InventorySnapshot s = SnapshotOf(WholeGpuCluster(4));
  Policy p;
  p.dra.align_pcie_root = true;
  json two = MigSpec("gpu.nvidia.com", "");
  two["devices"]["requests"][0]["exactly"]["count"] = 2;
  json review = TemplateReview(two);
  json response = ResponseOf(review, s, p);
  json constraints = Patched(review, response)["request"]["object"]["spec"]["spec"]["devices"]
                                              ["constraints"];
  EXPECT_EQ(constraints, json::array({{{"requests", json::array({"gpu"})},
                                       {"matchAttribute", "resource.kubernetes.io/pcieRoot"}}}));
  ExpectIdempotent(review, response, s, p);
  // Four GPUs share no root: a constraint would leave the claim unallocatable.
  json four = two;
  four["devices"]["requests"][0]["exactly"]["count"] = 4;
  EXPECT_FALSE(ResponseOf(TemplateReview(four), s, p).contains("patch"));
  // The policy's default leaves them as written.
  EXPECT_FALSE(ResponseOf(review, s, Policy{}).contains("patch"));
}

}  // namespace
}  // namespace gpuadmit
