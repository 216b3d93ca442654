// The MIG fallback under concurrency: 64 reviews at once through core::Review and the shared
// ledger, every 2g.20gb taken and the last 4 free devices 1g.10gb ones: exactly 4 pods fall back
// with a reserved device, every other one passes unchanged with a warning.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/admission/review.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/test_cluster.h"
#include "webhook/admission/shared_ledger.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

// Seed 003's demo cluster with no 2g.20gb left and 4 of 1g.10gb, all on gpu-small.
InventorySnapshot LastFourAreOneGTen() {
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", k2g, 7);
  testing::AddBoundPods(cluster, "gpu-medium", k1g, 3);
  testing::AddBoundPods(cluster, "gpu-small", k1g, 18);
  return testing::SnapshotOf(cluster);
}

struct Outcome {
  bool fell_back = false;  // asks 1g.10gb, annotated, with a reservation
  bool unchanged = false;  // no patch, one warning
};

Outcome ReviewOne(int i, const InventorySnapshot& s, SharedLedger& ledger) {
  json review = testing::GpuPodReview("gpu-pod-" + std::to_string(i), "uid-" + std::to_string(i));
  Policy policy;
  policy.placement.enabled = false;  // the patches are the fallback's alone
  auto answer = Review(review.dump(), s, policy, &ledger);
  if (!answer.ok()) return {};
  json response = json::parse(answer.value().body)["response"];
  if (!response.contains("patch")) return {false, response["warnings"].size() == 1};
  json pod = review["request"]["object"].patch(testing::PatchOf(response));
  const json& annotations = pod["metadata"]["annotations"];
  return {pod["spec"]["containers"][0]["resources"]["limits"].contains(k1g) &&
              annotations.value("gpuadmit.io/fallback", "") == "2g.20gb->1g.10gb" &&
              annotations.value("gpuadmit.io/reservation", "") == "uid-" + std::to_string(i),
          false};
}

TEST(Reservations, SixtyFourConcurrentReviewsForTheLastFourDevicesGiveExactlyFourFallbacks) {
  InventorySnapshot s = LastFourAreOneGTen();
  testing::FakeClock clock;
  SharedLedger ledger(clock, std::chrono::seconds(30));
  std::atomic<int> fell_back{0};
  std::atomic<int> unchanged{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      Outcome o = ReviewOne(i, s, ledger);
      if (o.fell_back) ++fell_back;
      if (o.unchanged) ++unchanged;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fell_back.load(), 4);
  EXPECT_EQ(unchanged.load(), 60);
  EXPECT_EQ(ledger.Reserved("gpu-small", k1g, ""), 4);
  EXPECT_EQ(ledger.Reserved("gpu-medium", k1g, ""), 0);
  EXPECT_EQ(ledger.size(), 4u);
}

}  // namespace
}  // namespace gpuadmit
