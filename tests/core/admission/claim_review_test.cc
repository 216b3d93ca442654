// Claims for DRA devices through whole reviews: a MIG profile written exactly becomes a
// firstAvailable list in the fallback's order, or (dra.firstAvailable off) the profile is chosen at
// admission; multi-GPU claims kept under one PCIe root; each patch applied and reviewed again.
#include "core/admission/claim_review.h"

#include <gtest/gtest.h>

#include "core/admission/review.h"
#include "core/inventory/reservation_ledger.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::DeviceUuid;
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

// A CREATE review of the ResourceClaim the resourceclaim controller makes, for pod ml/trainer,
// from a template asking one `profile`.
json ClaimForPod(const std::string& profile = "1g.10gb") {
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata",
                 {{"name", "trainer-gpu-x7k2p"},
                  {"namespace", "ml"},
                  {"annotations", {{"resource.kubernetes.io/pod-claim-name", "gpu"}}},
                  {"ownerReferences",
                   json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "trainer"},
                                 {"uid", "p-1"}, {"controller", true}}})}}},
                {"spec", MigSpec("mig.nvidia.com",
                                 "device.attributes['gpu.nvidia.com'].profile == '" + profile +
                                     "'")}};
  json review = TemplateReview(json::object());
  review["request"]["kind"]["kind"] = "ResourceClaim";
  review["request"]["resource"]["resource"] = "resourceclaims";
  review["request"]["object"] = claim;
  return review;
}

TEST(ClaimReview, AClaimMadeForAPodIsPinnedToTheGpuWhereFirstFitStrandsTheLeast) {
  json cluster = ReadJsonFile("tests/fixtures/dra/dynamic-mig.json");
  InventorySnapshot s = SnapshotOf(cluster);
  Policy p;
  const std::string on_gpu1 =
      "device.attributes['gpu.nvidia.com'].parentUUID == '" + DeviceUuid(cluster, "gpu-1") + "'";
  // 2g.20gb, made a list 2g.20gb, 1g.10gb: its pinned copy goes first, on gpu-1, whose 3g.40gb
  // is held; the list as planned follows, should gpu-1 be gone by the time the scheduler
  // allocates.
  json review = ClaimForPod("2g.20gb");
  json response = ResponseOf(review, s, p);
  json object = Patched(review, response)["request"]["object"];
  json alternatives = object["spec"]["devices"]["requests"][0]["firstAvailable"];
  ASSERT_EQ(alternatives.size(), 3u) << alternatives.dump();
  EXPECT_EQ(alternatives[0]["name"], "2g-20gb-steered");
  EXPECT_EQ(alternatives[0]["selectors"].size(), 2u);
  EXPECT_EQ(alternatives[0]["selectors"][1]["cel"]["expression"], on_gpu1);
  EXPECT_EQ(alternatives[1]["name"], "2g-20gb");
  EXPECT_EQ(alternatives[2]["name"], "1g-10gb");
  EXPECT_EQ(alternatives[1]["selectors"].size(), 1u);
  EXPECT_EQ(object["metadata"]["annotations"]["gpuadmit.io/steered-to"], "gpu: h200-dyn/gpu-1");
  ExpectIdempotent(review, response, s, p);
  // 1g.10gb, with no fallback, stays one request: the pinned copy, then the request as written.
  review = ClaimForPod("1g.10gb");
  response = ResponseOf(review, s, p);
  json request = Patched(review, response)["request"]["object"]["spec"]["devices"]["requests"][0];
  EXPECT_FALSE(request.contains("exactly"));
  ASSERT_EQ(request["firstAvailable"].size(), 2u) << request.dump();
  EXPECT_EQ(request["firstAvailable"][0]["name"], "gpu-steered");
  EXPECT_EQ(request["firstAvailable"][0]["selectors"][1]["cel"]["expression"], on_gpu1);
  json as_written = review["request"]["object"]["spec"]["devices"]["requests"][0]["exactly"];
  as_written["name"] = "gpu";
  EXPECT_EQ(request["firstAvailable"][1], as_written);
  ExpectIdempotent(review, response, s, p);
}

TEST(ClaimReview, ClaimsNotMadeForAPodOrWrittenExactlyOrOptedOutAreNotSteered) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/dynamic-mig.json"));
  auto steered = [&](const json& review, const Policy& p) {
    json object = Patched(review, ResponseOf(review, s, p))["request"]["object"];
    return object["metadata"].contains("annotations") &&
           object["metadata"]["annotations"].contains("gpuadmit.io/steered-to");
  };
  Policy p;
  ASSERT_TRUE(steered(ClaimForPod(), p));
  json shared = ClaimForPod();
  shared["request"]["object"]["metadata"].erase("ownerReferences");
  EXPECT_FALSE(steered(shared, p));
  json opted = ClaimForPod();
  opted["request"]["object"]["metadata"]["annotations"]["gpuadmit.io/optimize"] = "false";
  EXPECT_FALSE(steered(opted, p));
  Policy exactly;
  exactly.dra.first_available = false;
  EXPECT_FALSE(steered(ClaimForPod(), exactly));
  Policy unplaced;
  unplaced.placement.enabled = false;
  EXPECT_FALSE(steered(ClaimForPod(), unplaced));
  Policy unsteered;
  unsteered.dra.steer_claims = false;
  EXPECT_FALSE(steered(ClaimForPod(), unsteered));
  // Devices cut already: one free 1g.10gb is as good as another.
  InventorySnapshot cut = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  json review = ClaimForPod();
  json object = Patched(review, ResponseOf(review, cut, p))["request"]["object"];
  EXPECT_FALSE(object["metadata"]["annotations"].contains("gpuadmit.io/steered-to"));
}

TEST(ClaimReview, AClaimTheSchedulerMadeForAPodsExtendedResourcesIsLeftAsWritten) {
  // Its devices were chosen before it was made, for the request the pod's own review decided.
  for (const char* cluster :
       {"tests/fixtures/dra/seed-cluster.json", "tests/fixtures/dra/dynamic-mig.json"}) {
    InventorySnapshot s = SnapshotOf(ReadJsonFile(cluster));
    json review = ClaimForPod("2g.20gb");
    json& metadata = review["request"]["object"]["metadata"];
    metadata["annotations"] = {{"resource.kubernetes.io/extended-resource-claim", "true"}};
    json response = ResponseOf(review, s, Policy{});
    EXPECT_FALSE(response.contains("patch")) << cluster << ": " << testing::PatchOf(response);
    EXPECT_EQ(response["allowed"], true);
  }
}

// The <prefix>/steered-to annotation the review of `claim` writes, "" for none.
std::string SteeredTo(const json& claim, const InventorySnapshot& s, const Policy& p,
                      Reservations& reservations) {
  auto answer = Review(claim.dump(), s, p, &reservations);
  EXPECT_TRUE(answer.ok());
  json object = Patched(claim, json::parse(answer.value().body)["response"])["request"]["object"];
  return object["metadata"]["annotations"].value("gpuadmit.io/steered-to", "");
}

TEST(ClaimReview, AClaimIsSteeredOnTheNodeItsPodsAdmissionReserved) {
  json cluster = ReadJsonFile("tests/fixtures/dra/dynamic-mig.json");
  Policy p;
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);
  // A pod made from generateName names template one-1g: its admission reserves on h200-dyn.
  json pod_review = PodReview();
  json& pod = pod_review["request"]["object"];
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = "trainer-";
  pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "one-1g";
  InventorySnapshot before = SnapshotOf(cluster);
  auto admitted = Review(pod_review.dump(), before, p, &reservations);
  ASSERT_TRUE(admitted.ok());
  json stored =
      Patched(pod_review, json::parse(admitted.value().body)["response"])["request"]["object"];
  const std::string key = stored["metadata"]["annotations"]["gpuadmit.io/reservation"];
  ASSERT_EQ(reservations.HeldUnder(key).size(), 1u);
  EXPECT_EQ(reservations.HeldUnder(key)[0].node, "h200-dyn");
  // The watch shows it under the name the apiserver gave it; the claim made for it finds its
  // reservation by the key the pod carries.
  stored["metadata"]["name"] = "trainer-x7k2p";
  cluster["items"].push_back(stored);
  InventorySnapshot s = SnapshotOf(cluster);
  EXPECT_EQ(s.ReservationOfClaimPod("ml/trainer-x7k2p"), key);
  json claim = ClaimForPod();
  claim["request"]["object"]["metadata"]["ownerReferences"][0]["name"] = "trainer-x7k2p";
  auto steered = [&](Reservations& r) { return SteeredTo(claim, s, p, r); };
  EXPECT_EQ(steered(reservations), "gpu: h200-dyn/gpu-1");
  // Had its admission counted it elsewhere, the claim is steered there or not at all.
  ReservationLedger other_ledger(std::chrono::seconds(30));
  LedgerReservations other(other_ledger);
  ASSERT_TRUE(other.Commit(key, "ml/trainer-", {{"h100-a", "nvidia.com/mig-1g.10gb", 1, 1}}));
  EXPECT_EQ(steered(other), "");
}

TEST(ClaimReview, AClaimMadeBeforeTheWatchShowsItsPodIsSteeredOnTheNodeThePodWasAdmittedFor) {
  // The claim controller makes a pod's claim milliseconds after the pod: the snapshot does not
  // know the pod yet, so its reservation is found by the name the pod was admitted under.
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/dynamic-mig.json"));
  Policy p;
  json pod_review = PodReview();
  pod_review["request"]["object"]["metadata"]["name"] = "trainer-0";
  pod_review["request"]["name"] = "trainer-0";
  pod_review["request"]["object"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] =
      "one-1g";
  json claim = ClaimForPod();
  claim["request"]["object"]["metadata"]["ownerReferences"][0]["name"] = "trainer-0";
  auto steered = [&](Reservations& r) { return SteeredTo(claim, s, p, r); };
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);
  ASSERT_TRUE(Review(pod_review.dump(), s, p, &reservations).ok());
  ASSERT_EQ(reservations.HeldFor("ml/trainer-0").size(), 1u);
  EXPECT_EQ(s.ReservationOfClaimPod("ml/trainer-0"), "");
  EXPECT_EQ(steered(reservations), "gpu: h200-dyn/gpu-1");
  // Admitted for another node, the same claim is not steered here; the newest reservation of
  // the pod's name is the one that counts.
  ReservationLedger other_ledger(std::chrono::seconds(30));
  ReservationLedger::TimePoint now{};
  LedgerReservations other(other_ledger, &now);
  ASSERT_TRUE(
      other.Commit("uid-old", "ml/trainer-0", {{"h200-dyn", "nvidia.com/mig-1g.10gb", 1, 7}}));
  now += std::chrono::seconds(1);
  ASSERT_TRUE(
      other.Commit("uid-new", "ml/trainer-0", {{"h100-a", "nvidia.com/mig-1g.10gb", 1, 1}}));
  EXPECT_EQ(steered(other), "");
}

}  // namespace
}  // namespace gpuadmit
