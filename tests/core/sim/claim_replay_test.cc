// Claim replay on dynamic MIG: a node of two GPUs, gpu-1 with a 3g.40gb held on memory slices
// 0-3. A 1g.10gb claim then a 4g.40gb one (which only slices 0-3 can take): the allocator's first
// fit puts the 1g.10gb on fresh gpu-0 and leaves the 4g.40gb nowhere to go; steered, the 1g.10gb
// goes to gpu-1's free half and both run.
#include "core/sim/claim_replay.h"

#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadJsonFile;

json ClusterWith4g() {
  json cluster = ReadJsonFile("tests/fixtures/dra/dynamic-mig.json");
  json t = {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaimTemplate"},
            {"metadata", {{"name", "one-4g"}, {"namespace", "ml"}}}};
  for (const json& item : cluster["items"]) {
    if (item["kind"] == "ResourceClaimTemplate") t["spec"] = item["spec"];
  }
  std::string& cel = t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]
                      ["expression"].get_ref<std::string&>();
  cel.replace(cel.find("1g.10gb"), 7, "4g.40gb");
  cluster["items"].push_back(t);
  return cluster;
}

Arrival PodNaming(const std::string& name, const std::string& claim_template, double at) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec",
               {{"resourceClaims",
                 json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", claim_template}}})},
                {"containers", json::array({{{"name", "cuda"}, {"image", "cuda"}}})}}}};
  return {at, std::nullopt, pod};
}

TEST(ClaimReplay, SteeringKeepsTheFreshGpuWholeForTheProfileOnlyItCanTake) {
  json cluster = ClusterWith4g();
  std::vector<Arrival> stream = {PodNaming("small", "one-1g", 0), PodNaming("large", "one-4g", 1)};
  ASSERT_TRUE(IsClaimScenario(cluster, stream));
  auto as_written = ClaimReplay(cluster, stream, nullptr);
  ASSERT_TRUE(as_written.ok()) << as_written.error().message;
  EXPECT_EQ(as_written.value().placed, 1);
  EXPECT_EQ(as_written.value().pending, 1);
  ASSERT_EQ(as_written.value().stranded_at_rejection.size(), 1u);
  // 2 GPUs, 3/7 + 1/7 allocated.
  EXPECT_NEAR(as_written.value().stranded_at_rejection[0], 1 - (4.0 / 7) / 2, 1e-9);
  // Dropped instead of waiting: it is not pending, and not placed.
  auto dropped = ClaimReplay(cluster, stream, nullptr, /*drop_unplaced=*/true).value();
  EXPECT_EQ(dropped.placed, 1);
  EXPECT_EQ(dropped.pending, 0);
  EXPECT_EQ(dropped.stranded_at_rejection.size(), 1u);
  Policy steer;
  steer.mig.fallback = false;  // the claims as written, pinned: steering alone
  auto steered = ClaimReplay(cluster, stream, &steer);
  ASSERT_TRUE(steered.ok()) << steered.error().message;
  EXPECT_EQ(steered.value().placed, 2);
  EXPECT_EQ(steered.value().fallbacks, 0);
  EXPECT_TRUE(steered.value().stranded_at_rejection.empty());
  EXPECT_NEAR(steered.value().allocated_gpus, (3.0 + 1 + 4) / 7, 1e-9);  // with the held 3g
  // Without steering the same policy leaves the allocator its first fit.
  steer.dra.steer_claims = false;
  EXPECT_EQ(ClaimReplay(cluster, stream, &steer).value().placed, 1);
}

TEST(ClaimReplay, APodNamingATemplateTheClusterLacksIsAnError) {
  json cluster = ClusterWith4g();
  std::vector<Arrival> stream = {PodNaming("lost", "one-9g", 0)};
  auto r = ClaimReplay(cluster, stream, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "pod ml/lost names ResourceClaimTemplate one-9g, which the cluster file does not hold");
  json no_slices = json{{"kind", "List"}, {"items", json::array()}};
  EXPECT_FALSE(IsClaimScenario(no_slices, stream));
}

}  // namespace
}  // namespace gpuadmit
