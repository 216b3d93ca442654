// The MIG fallback through whole reviews: seed 003 from an empty cluster to exhaustion, a
// Deployment template and an OME InferenceService (a custom workload whose GPU container is its
// `runner`); each patch applied (nlohmann's RFC 6902) and reviewed again to prove idempotency.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadJsonFile;
using testing::SnapshotOf;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";
constexpr char kFallback[] = "gpuadmit.io/fallback";

// The default policy with placement off: the patches and warnings are the fallback's alone.
Policy FallbackOnly() {
  Policy p;
  p.placement.enabled = false;
  return p;
}

json ResponseOf(const std::string& body, const InventorySnapshot& s, const Policy& p,
                Reservations* reservations = nullptr) {
  auto r = Review(body, s, p, reservations);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return json::parse(r.value().body).at("response");
}

// The review's object with the answer's patch applied.
json Patched(const json& review, const json& response) {
  return review["request"]["object"].patch(testing::PatchOf(response));
}

void ExpectIdempotent(json review, const json& response, const InventorySnapshot& s,
                      const Policy& p) {
  review["request"]["object"] = Patched(review, response);
  json again = ResponseOf(review.dump(), s, p);
  EXPECT_FALSE(again.contains("patch")) << testing::PatchOf(again).dump();
}

// Seed 003's cluster before any workload: two 4-GPU H200 nodes, 12 x 2g.20gb + 4 x 1g.10gb on
// gpu-medium, 28 x 1g.10gb on gpu-small, no GPU pods.
json EmptySeed003() {
  json cluster = testing::DemoCluster();
  std::erase_if(cluster["items"].get_ref<json::array_t&>(), [](const json& item) {
    return item["kind"] == "Pod" && item["spec"]["containers"][0].contains("resources") &&
           item["spec"]["containers"][0]["resources"].dump().find("nvidia.com/") !=
               std::string::npos;
  });
  return cluster;
}

json PodReview(int i) {
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-pod.json");
  std::string name = "gpu-pod-" + std::to_string(i);
  review["request"]["uid"] = "uid-" + std::to_string(i);
  review["request"]["name"] = name;
  review["request"]["object"]["metadata"]["name"] = name;
  return review;
}

// The MIG resource a pod's first container asks for in its limits.
std::string MigAsk(const json& pod) {
  for (const auto& [resource, quantity] :
       pod["spec"]["containers"][0]["resources"]["limits"].items()) {
    if (resource.starts_with("nvidia.com/mig-")) return resource;
  }
  return "";
}

std::string FallbackOf(const json& pod) {
  return pod["metadata"].value("annotations", json::object()).value(kFallback, "");
}

// Admits 45 pods one by one, each bound (as the scheduler would) before the next arrives, or
// only reserved when `ledger` is given. Returns, per pod, "<resource> <fallback annotation>".
std::vector<std::string> AdmitFortyFive(Reservations* ledger) {
  json cluster = EmptySeed003();
  InventorySnapshot s = SnapshotOf(cluster);
  std::vector<std::string> outcomes;
  for (int i = 1; i <= 45; ++i) {
    json review = PodReview(i);
    json response = ResponseOf(review.dump(), s, FallbackOnly(), ledger);
    EXPECT_EQ(response["allowed"], true);
    json pod = Patched(review, response);
    outcomes.push_back(MigAsk(pod) + " " + FallbackOf(pod));
    if (i == 13 || i == 45) {
      EXPECT_EQ(response["warnings"].size(), 1u) << i;
    }
    if (ledger == nullptr && i < 45) {  // the scheduler binds it where the most are free
      pod["spec"]["nodeName"] = std::string(s.NodesOffering(MigAsk(pod))[0]->name());
      pod["status"] = {{"phase", "Running"}};
      cluster["items"].push_back(pod);
      s = SnapshotOf(cluster);
    }
  }
  return outcomes;
}

std::vector<std::string> Seed003Outcomes() {
  std::vector<std::string> expected(12, std::string(k2g) + " ");
  expected.insert(expected.end(), 32, std::string(k1g) + " 2g.20gb->1g.10gb");
  expected.push_back(std::string(k2g) + " ");  // both exhausted: unchanged
  return expected;
}

TEST(Seed003, TwelvePodsTakeEvery2gThe13thFallsBackTo1gThen1gRunsOutToo) {
  EXPECT_EQ(AdmitFortyFive(nullptr), Seed003Outcomes());
}

TEST(Seed003, ReservationsAloneGiveTheSameOutcomesBeforeAnyPodIsBound) {
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);  // commits at one instant
  EXPECT_EQ(AdmitFortyFive(&reservations), Seed003Outcomes());
}

TEST(Seed003, The45thPodIsLeftUnchangedWithAWarning) {
  json cluster = EmptySeed003();
  testing::AddBoundPods(cluster, "gpu-medium", k2g, 12);
  testing::AddBoundPods(cluster, "gpu-medium", k1g, 4);
  testing::AddBoundPods(cluster, "gpu-small", k1g, 28);
  json response = ResponseOf(PodReview(45).dump(), SnapshotOf(cluster), FallbackOnly());
  EXPECT_EQ(response["allowed"], true);
  EXPECT_FALSE(response.contains("patch"));
  EXPECT_EQ(response["warnings"],
            json::array({"nvidia.com/mig-2g.20gb is free on no node Pod default/gpu-pod-45 may "
                         "use, and no smaller MIG profile is either; left unchanged"}));
}

json Exhausted2g() {
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", k2g, 7);
  return cluster;
}

TEST(Fallback, ADeploymentTemplateFallsBackInItsTemplate) {
  json review = ReadJsonFile("tests/fixtures/gpu/kubectl-deployment.json");
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  json response = ResponseOf(review.dump(), s, FallbackOnly());
  EXPECT_EQ(testing::PatchOf(response), json::parse(R"([
    {"op":"remove","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1mig-2g.20gb"},
    {"op":"add","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"remove","path":"/spec/template/spec/containers/0/resources/requests/nvidia.com~1mig-2g.20gb"},
    {"op":"add","path":"/spec/template/spec/containers/0/resources/requests/nvidia.com~1mig-1g.10gb","value":"1"},
    {"op":"add","path":"/spec/template/metadata/annotations","value":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}}
  ])"));
  ExpectIdempotent(review, response, s, FallbackOnly());
}

Policy WithOme() {
  Policy p = FallbackOnly();
  p.workloads.push_back(
      {"ome.io", "InferenceService", {"/spec/engine", "/spec/decoder"}, "runner", "/metadata"});
  return p;
}

TEST(Fallback, AnOmeInferenceServiceFallsBackInEveryRunner) {
  json review = ReadJsonFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  json response = ResponseOf(review.dump(), s, WithOme());
  json patch = testing::PatchOf(response);
  json expected = json::array();
  for (const char* part : {"engine", "decoder"}) {
    std::string at = std::string("/spec/") + part + "/runner/resources/";
    for (const char* list : {"limits", "requests"}) {
      expected.push_back({{"op", "remove"}, {"path", at + list + "/nvidia.com~1mig-2g.20gb"}});
      expected.push_back(
          {{"op", "add"}, {"path", at + list + "/nvidia.com~1mig-1g.10gb"}, {"value", "1"}});
    }
    // kubectl apply wrote an annotations map: one key is added to it.
    expected.push_back({{"op", "add"},
                        {"path", "/metadata/annotations/gpuadmit.io~1fallback"},
                        {"value", "2g.20gb->1g.10gb"}});
  }
  EXPECT_EQ(patch, expected);
  ExpectIdempotent(review, response, s, WithOme());
}

TEST(PinNode, APinnedInferenceServiceCarriesEachPodSpecsNodeAffinityOnce) {
  json review = ReadJsonFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  InventorySnapshot s = SnapshotOf(EmptySeed003());
  Policy p = WithOme();
  p.placement.enabled = true;
  p.placement.affinity = AffinityMode::kRequired;
  // Without pinNode, a template is not steered.
  EXPECT_EQ(ResponseOf(review.dump(), s, p).dump().find("affinity"), std::string::npos);

  p.workloads[0].pin_node = true;
  json response = ResponseOf(review.dump(), s, p);
  json object = Patched(review, response);
  for (const char* part : {"engine", "decoder"}) {
    // The only node with 2g.20gb, as the seed's InferenceService YAML writes it.
    EXPECT_EQ(object["spec"][part]["affinity"], json::parse(R"({"nodeAffinity":{
      "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
        {"key":"kubernetes.io/hostname","operator":"In","values":["gpu-medium"]}]}]}}})"))
        << part;
  }
  ExpectIdempotent(review, response, s, p);
}

TEST(Fallback, AnInferenceServiceIsLeftAloneUnlessThePolicyNamesIt) {
  json review = ReadJsonFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  json response = ResponseOf(review.dump(), SnapshotOf(Exhausted2g()), Policy{});
  EXPECT_EQ(response["allowed"], true);
  EXPECT_FALSE(response.contains("patch"));
}

TEST(Fallback, AnInferenceServiceUpdateIsReplannedOnlyWhenARunnersGpuAskChanged) {
  json review = ReadJsonFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  review["request"]["operation"] = "UPDATE";
  review["request"]["oldObject"] = review["request"]["object"];
  InventorySnapshot s = SnapshotOf(Exhausted2g());
  EXPECT_FALSE(ResponseOf(review.dump(), s, WithOme()).contains("patch"));
  // The old decoder asked for 1g.10gb: only the decoder is planned again.
  json& old_limits =
      review["request"]["oldObject"]["spec"]["decoder"]["runner"]["resources"]["limits"];
  old_limits.erase(k2g);
  old_limits[k1g] = "1";
  json patch = testing::PatchOf(ResponseOf(review.dump(), s, WithOme()));
  ASSERT_EQ(patch.size(), 5u);
  EXPECT_EQ(patch[0]["path"], "/spec/decoder/runner/resources/limits/nvidia.com~1mig-2g.20gb");
}

TEST(Fallback, APolicyFileDescribesSeed003sH200AndTheInferenceService) {
  auto policy = ParsePolicy(R"(
workloads:
  - group: ome.io
    kind: InferenceService
    podSpecs: [/spec/engine, /spec/decoder]
    gpuContainer: runner
mig:
  products:
    - product: NVIDIA-H200
      profiles: {1g.10gb: 7, 2g.20gb: 3, 3g.40gb: 2, 7g.70gb: 1}
placement:
  enabled: false
)");
  ASSERT_TRUE(policy.ok()) << policy.error().front().message;
  std::string body =
      ReadJsonFile("tests/fixtures/admission/ome-inferenceservice-create.json").dump();
  auto answer = Review(body, SnapshotOf(Exhausted2g()), policy.value());
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer.value().kind, AdmissionOutcome::Kind::kPatch);
  EXPECT_EQ(std::count(answer.value().trail.begin(), answer.value().trail.end(),
                       "  chain 1g.10gb (NVIDIA-H200: catalog NVIDIA-H200)"),
            2);  // engine and decoder
}

}  // namespace
}  // namespace gpuadmit
