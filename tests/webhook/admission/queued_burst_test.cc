// Seed 003 in a burst (docs/decisions.md, "A device's life"): a Deployment scaling up creates
// its pods together. gpuadmit admits each with a 2g.20gb reserved; the pods appear in the watch
// unbound, which ends their reservations, and the scheduler has not bound them yet. The next pod
// must still fall back to 1g.10gb: the queued pods hold the devices they were admitted for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/admission/review.h"
#include "core/inventory/cluster_state.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/test_cluster.h"
#include "webhook/admission/shared_ledger.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";
constexpr char kReservation[] = "gpuadmit.io/reservation";

// The pod of replica `i` as gpuadmit patched it, or null when the review did not patch it.
json Admit(int i, const InventorySnapshot& snapshot, SharedLedger& ledger) {
  json review = testing::GpuPodReview("llm-burst-" + std::to_string(i), "uid-" + std::to_string(i));
  auto answer = Review(review.dump(), snapshot, Policy{}, &ledger);
  if (!answer.ok()) return nullptr;
  json response = json::parse(answer.value().body)["response"];
  if (!response.contains("patch")) return nullptr;
  json pod = review["request"]["object"].patch(testing::PatchOf(response));
  pod["metadata"]["namespace"] = review["request"]["namespace"];
  pod["metadata"]["creationTimestamp"] = "2026-11-25T10:00:00Z";
  pod["status"] = {{"phase", "Pending"}};
  return pod;
}

const json& Limits(const json& pod) { return pod["spec"]["containers"][0]["resources"]["limits"]; }

TEST(QueuedBurst, PodsAdmittedAndQueuedKeepTheirDevicesSoTheNextOneFallsBack) {
  ClusterState state(kReservation);
  json demo = testing::DemoCluster();
  for (const json& item : demo["items"]) {
    if (item["kind"] == "Node") state.UpsertNode(ReadNode(item));
    if (item["kind"] == "Pod") state.UpsertPod(ReadPod(item, kReservation));
  }
  uint64_t version = 0;
  InventorySnapshot before = state.Snapshot(++version);
  ASSERT_NE(before.FindNode("gpu-medium"), nullptr);
  ASSERT_EQ(before.FindNode("gpu-medium")->Free(k2g), 7);  // the demo's free 2g.20gb
  testing::FakeClock clock;
  SharedLedger ledger(clock, std::chrono::seconds(30));

  // Seven replicas created within the same moment, all reviewed on the same snapshot: the
  // ledger hands each its own 2g.20gb.
  std::vector<json> admitted;
  for (int i = 0; i < 7; ++i) {
    json pod = Admit(i, before, ledger);
    ASSERT_TRUE(pod.is_object()) << i;
    EXPECT_TRUE(Limits(pod).contains(k2g)) << pod.dump();
    EXPECT_FALSE(pod["metadata"]["annotations"].contains("gpuadmit.io/fallback")) << i;
    admitted.push_back(std::move(pod));
  }
  EXPECT_EQ(ledger.size(), 7u);

  // They reach the watch unbound: their reservations end, their need is queued.
  for (const json& pod : admitted) state.UpsertPod(ReadPod(pod, kReservation));
  ledger.Release(state.TakeArrivedReservations());
  EXPECT_EQ(ledger.size(), 0u);
  InventorySnapshot queued = state.Snapshot(++version);
  const NodeInventory& medium = *queued.FindNode("gpu-medium");
  EXPECT_EQ(Get(medium.queued, k2g), 7);
  EXPECT_EQ(medium.Free(k2g), 0);

  // The eighth replica falls back instead of waiting behind them.
  json eighth = Admit(7, queued, ledger);
  ASSERT_TRUE(eighth.is_object());
  EXPECT_TRUE(Limits(eighth).contains(k1g)) << eighth.dump();
  EXPECT_FALSE(Limits(eighth).contains(k2g));
  EXPECT_EQ(eighth["metadata"]["annotations"].value("gpuadmit.io/fallback", ""),
            "2g.20gb->1g.10gb");

  // The scheduler binds the seven: used now, and still no 2g.20gb free.
  for (json pod : admitted) {
    pod["spec"]["nodeName"] = "gpu-medium";
    pod["status"]["phase"] = "Running";
    state.UpsertPod(ReadPod(pod, kReservation));
  }
  InventorySnapshot bound = state.Snapshot(++version);
  EXPECT_EQ(Get(bound.FindNode("gpu-medium")->used, k2g), 12);
  EXPECT_TRUE(bound.FindNode("gpu-medium")->queued.empty());
  EXPECT_EQ(bound.FindNode("gpu-medium")->Free(k2g), 0);
}

}  // namespace
}  // namespace gpuadmit
