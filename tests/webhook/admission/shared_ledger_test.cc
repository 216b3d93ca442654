// Reservations through the whole review path: concurrent admissions for the last devices, TTL,
// release on arrival, dryRun, and keys written by hand.
#include "webhook/admission/shared_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/admission/review.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";
constexpr char kReservation[] = "gpuadmit.io/reservation";

// The demo cluster with 4 of 2g.20gb left and no 1g.10gb at all: nothing to fall back to.
InventorySnapshot LastFour() {
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", k2g, 3);
  testing::AddBoundPods(cluster, "gpu-medium", k1g, 3);
  testing::AddBoundPods(cluster, "gpu-small", k1g, 22);
  return testing::SnapshotOf(cluster);
}

std::string PodReview(const std::string& uid, bool dry_run = false, json annotations = nullptr) {
  json review = testing::ReadJsonFile("tests/fixtures/gpu/kubectl-pod.json");
  review["request"]["uid"] = uid;
  review["request"]["dryRun"] = dry_run;
  if (!annotations.is_null()) review["request"]["object"]["metadata"]["annotations"] = annotations;
  return review.dump();
}

// The reservation key the answer's patch writes, or "".
std::string ReservedKey(const std::string& body, const InventorySnapshot& s, Reservations& ledger) {
  auto answer = Review(body, s, Policy{}, &ledger);
  EXPECT_TRUE(answer.ok());
  json response = json::parse(answer.value().body)["response"];
  if (!response.contains("patch")) return "";
  json object = json::parse(body)["request"]["object"].patch(testing::PatchOf(response));
  const json& annotations = object["metadata"]["annotations"];
  return annotations.is_object() ? annotations.value(kReservation, "") : "";
}

TEST(Reservations, SixtyFourConcurrentReviewsForTheLastFourDevicesHandOutExactlyFour) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  std::atomic<int> reserved{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      if (!ReservedKey(PodReview("uid-" + std::to_string(i)), s, ledger).empty()) ++reserved;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(reserved.load(), 4);
  EXPECT_EQ(ledger.Reserved("gpu-medium", k2g, ""), 4);
}

TEST(Reservations, TheyEndAfterTheTtlAndWhenThePodArrives) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(ReservedKey(PodReview("a" + std::to_string(i)), s, ledger).empty());
  EXPECT_EQ(ReservedKey(PodReview("late"), s, ledger), "");
  ledger.Release({"a0"});  // its pod arrived in the inventory
  EXPECT_EQ(ReservedKey(PodReview("b"), s, ledger), "b");
  clock.Advance(seconds(31));
  EXPECT_EQ(ledger.Expire(), 4u);
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(Reservations, DryRunReservesNothing) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(ReservedKey(PodReview("d" + std::to_string(i), true), s, ledger), "");
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(Reservations, AReinvocationKeepsItsKeyAndAddsNothing) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  std::string first = PodReview("first");
  auto answer = Review(first, s, Policy{}, &ledger);
  ASSERT_TRUE(answer.ok());
  // The same pod, patched (its reservation key, its node preference), reviewed again under a
  // new request uid.
  json review = json::parse(first);
  review["request"]["object"] = review["request"]["object"].patch(
      testing::PatchOf(json::parse(answer.value().body)["response"]));
  ASSERT_EQ(review["request"]["object"]["metadata"]["annotations"][kReservation], "first");
  review["request"]["uid"] = "second";
  auto again = Review(review.dump(), s, Policy{}, &ledger);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(json::parse(again.value().body)["response"].contains("patch"));
  EXPECT_EQ(ledger.Reserved("gpu-medium", k2g, ""), 1);
}

TEST(Reservations, AKeyWrittenByHandOrCopiedClaimsNothing) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(ReservedKey(PodReview("k" + std::to_string(i)), s, ledger).empty());
  // Another pod copies k0's key: it does not get k0's device.
  json other = json::parse(PodReview("thief", false, {{kReservation, "k0"}}));
  other["request"]["object"]["metadata"]["name"] = "other-pod";
  other["request"]["name"] = "other-pod";
  EXPECT_EQ(ReservedKey(other.dump(), s, ledger), "");
  EXPECT_EQ(ReservedKey(PodReview("typed", false, {{kReservation, "made-up"}}), s, ledger), "");
  EXPECT_EQ(ledger.Reserved("gpu-medium", k2g, ""), 4);
}

TEST(ReservationScopes, AFloodFromAnotherScopeHoldsNothingTheAuthenticatedScopeCounts) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  SharedLedger::Scope forger = ledger.In("address 10.0.0.9");
  int forged = 0;
  for (int i = 0; i < 20; ++i) {
    forged += !ReservedKey(PodReview("forged-" + std::to_string(i)), s, forger).empty();
  }
  EXPECT_EQ(forged, 4);  // the forger's own reservations bound it: 4 devices, then no more
  EXPECT_EQ(ledger.Reserved("gpu-medium", k2g, ""), 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(ReservedKey(PodReview("real-" + std::to_string(i)), s, ledger).empty()) << i;
  }
  EXPECT_EQ(ReservedKey(PodReview("real-late"), s, ledger), "");  // the real scope's own count
  EXPECT_EQ(ledger.size(), 8u);
  EXPECT_EQ(ledger.scopes(), 1u);
  std::vector<Claim> totals = ledger.Totals();  // the gauges see every scope's
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].count, 8);
}

TEST(ReservationScopes, ArrivalReleasesInEveryScopeAndAnEmptyScopeIsDropped) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  SharedLedger::Scope a = ledger.In("address 10.0.0.1");
  ASSERT_EQ(ReservedKey(PodReview("same-uid"), s, a), "same-uid");
  ASSERT_EQ(ReservedKey(PodReview("same-uid"), s, ledger), "same-uid");  // no clash across scopes
  EXPECT_EQ(a.Reserved("gpu-medium", k2g, ""), 1);
  ledger.Release({"same-uid"});
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(ledger.Expire(), 0u);
  EXPECT_EQ(ledger.scopes(), 0u);
  ASSERT_EQ(ReservedKey(PodReview("later"), s, a), "later");
  clock.Advance(seconds(31));
  EXPECT_EQ(ledger.Expire(), 1u);
  EXPECT_EQ(ledger.scopes(), 0u);
}

TEST(ReservationScopes, CallersBeyondTheCapShareOneScopeApartFromTheAuthenticated) {
  InventorySnapshot s = LastFour();
  testing::FakeClock clock;
  SharedLedger ledger(clock, seconds(30));
  for (size_t i = 0; i < kMaxReservationScopes; ++i) {
    std::string name = "address 10.1." + std::to_string(i);
    SharedLedger::Scope scope = ledger.In(name);
    ASSERT_TRUE(scope.Commit("k" + std::to_string(i), "default/p", {{"gpu-small", k1g, 1, 1}}));
  }
  EXPECT_EQ(ledger.scopes(), kMaxReservationScopes);
  SharedLedger::Scope late = ledger.In("address 10.2.0.1");
  SharedLedger::Scope later = ledger.In("address 10.2.0.2");
  ASSERT_TRUE(late.Commit("late", "default/p", {{"gpu-medium", k2g, 4, 4}}));
  EXPECT_EQ(later.Reserved("gpu-medium", k2g, ""), 4);  // both in the overflow scope
  EXPECT_EQ(ledger.scopes(), kMaxReservationScopes + 1);
  EXPECT_EQ(ledger.Reserved("gpu-medium", k2g, ""), 0);
}

}  // namespace
}  // namespace gpuadmit
