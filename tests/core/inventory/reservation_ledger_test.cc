#include "core/inventory/reservation_ledger.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuadmit
