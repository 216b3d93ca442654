#include "core/inventory/reservation_ledger.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuadmit {
namespace {

using std::chrono::seconds;
using TimePoint = ReservationLedger::TimePoint;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";

TEST(ReservationLedger, ACommitHoldsDevicesThatLaterCommitsCannotTake) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  EXPECT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 2}}, t0));
  EXPECT_TRUE(ledger.Commit("b", "ns/b", {{"n1", k2g, 1, 2}}, t0));
  EXPECT_FALSE(ledger.Commit("c", "ns/c", {{"n1", k2g, 1, 2}}, t0));  // 2 free, 2 reserved
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 2);
  EXPECT_EQ(ledger.Reserved("n1", k2g, "a"), 1);  // a's own devices do not count against it
  EXPECT_EQ(ledger.Reserved("n2", k2g, ""), 0);
}

TEST(ReservationLedger, RecommittingUnderTheSameKeyReplacesInsteadOfAdding) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  ASSERT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 1}}, t0));
  EXPECT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 1}}, t0));  // a reinvocation
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 1);
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(ReservationLedger, AllOrNothing) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  ASSERT_TRUE(ledger.Commit("a", "ns/a", {{"n2", k2g, 1, 1}}, t0));
  EXPECT_FALSE(ledger.Commit("b", "ns/b", {{"n1", k2g, 1, 5}, {"n2", k2g, 1, 1}}, t0));
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 0);
}

TEST(ReservationLedger, OnlyTheOwnerHoldsAKey) {
  ReservationLedger ledger(seconds(30));
  ASSERT_TRUE(ledger.Commit("a", "ns/train", {{"n1", k2g, 1, 1}}, TimePoint{}));
  EXPECT_TRUE(ledger.Holds("a", "ns/train"));
  EXPECT_FALSE(ledger.Holds("a", "ns/other"));      // copied from another pod
  EXPECT_FALSE(ledger.Holds("typed", "ns/train"));  // written by hand
}

TEST(ReservationLedger, ReservationsEndAfterTheirTtlOrWhenReleased) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  ASSERT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 1}}, t0));
  ASSERT_TRUE(ledger.Commit("b", "ns/b", {{"n2", k2g, 1, 1}}, t0 + seconds(10)));
  EXPECT_EQ(ledger.Expire(t0 + seconds(29)), 0u);
  EXPECT_EQ(ledger.Expire(t0 + seconds(30)), 1u);
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 0);
  ledger.Release("b");
  ledger.Release("unknown");
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(ledger.Reserved("n2", k2g, ""), 0);
}

TEST(ReservationLedger, AReservationWhosePodWaitsForItsClaimsOutlivesItsTtl) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  ASSERT_TRUE(ledger.Commit("waits", "ns/a", {{"n1", k2g, 1, 2}}, t0));
  ASSERT_TRUE(ledger.Commit("other", "ns/b", {{"n1", k2g, 1, 2}}, t0));
  ledger.KeepWhileWaiting({"waits"});
  EXPECT_EQ(ledger.Expire(t0 + seconds(30)), 1u);  // "other" ends, "waits" lives on
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 1);
  EXPECT_EQ(ledger.Expire(t0 + seconds(90)), 0u);
  EXPECT_TRUE(ledger.Holds("waits", "ns/a"));
  EXPECT_FALSE(ledger.Commit("third", "ns/c", {{"n1", k2g, 2, 2}}, t0 + seconds(90)));
  ledger.KeepWhileWaiting({});  // its pod was bound, or found unschedulable: one TTL more
  EXPECT_EQ(ledger.Expire(t0 + seconds(119)), 0u);
  EXPECT_EQ(ledger.Expire(t0 + seconds(120)), 1u);
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 0);
}

TEST(ReservationLedger, ARecommitLivesFromItsOwnTime) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  ASSERT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 1}}, t0));
  ASSERT_TRUE(ledger.Commit("a", "ns/a", {{"n1", k2g, 1, 1}}, t0 + seconds(20)));
  EXPECT_EQ(ledger.Expire(t0 + seconds(30)), 0u);  // the first commit's time no longer counts
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 1);
  EXPECT_EQ(ledger.Expire(t0 + seconds(50)), 1u);
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 0);
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(ReservationLedger, ExpiryEndsReservationsSoonestFirstAndOnlyOnce) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  // Committed out of time order, with keys whose order is not their times'.
  for (int i : {5, 1, 4, 2, 3}) {
    std::string key = "k" + std::to_string(10 - i);
    ASSERT_TRUE(ledger.Commit(key, "ns/" + key, {{"n1", k2g, 1, 10}}, t0 + seconds(i)));
  }
  ledger.Release("k8");                                            // committed at t0 + 2
  ASSERT_TRUE(ledger.Commit("k7", "ns/k7", {}, t0 + seconds(6)));  // emptied: committed at 3
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 3);
  EXPECT_EQ(ledger.Expire(t0 + seconds(31)), 1u);  // k9, at 1
  EXPECT_EQ(ledger.Expire(t0 + seconds(33)), 0u);  // k8 and k7 ended already
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 2);
  EXPECT_TRUE(ledger.Holds("k6", "ns/k6"));
  EXPECT_EQ(ledger.Expire(t0 + seconds(34)), 1u);  // k6, at 4
  EXPECT_FALSE(ledger.Holds("k6", "ns/k6"));
  EXPECT_TRUE(ledger.Holds("k5", "ns/k5"));
  // A commit expires what is due first: k5's device is free again for it to take.
  EXPECT_TRUE(ledger.Commit("late", "ns/late", {{"n1", k2g, 1, 1}}, t0 + seconds(35)));
  EXPECT_FALSE(ledger.Holds("k5", "ns/k5"));
  EXPECT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger.Reserved("n1", k2g, ""), 1);
}

}  // namespace
}  // namespace gpuadmit
