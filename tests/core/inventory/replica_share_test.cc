#include "core/inventory/replica_share.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using testing::AddBoundPods;
using testing::DemoCluster;
using testing::SnapshotOf;
using TimePoint = ReservationLedger::TimePoint;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";

// The demo cluster with `free` of gpu-medium's 12 mig-2g.20gb devices left (7 are free in it).
InventorySnapshot MediumWithFree(int free) {
  nlohmann::json cluster = DemoCluster();
  AddBoundPods(cluster, "gpu-medium", k2g, 7 - free);
  return SnapshotOf(cluster);
}

TEST(ReplicaShare, OneReplicaOfThreeSeesAThirdOfTheFreeDevicesRoundedDown) {
  InventorySnapshot snapshot = MediumWithFree(4);
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations inner(ledger);
  ReplicaShare share(inner, snapshot, 3);
  EXPECT_EQ(share.Reserved("gpu-medium", k2g, ""), 3);  // 4 free, 1 of them this replica's
  EXPECT_TRUE(share.Commit("a", "ns/a", {{"gpu-medium", k2g, 1, 4}}));
  EXPECT_FALSE(share.Commit("b", "ns/b", {{"gpu-medium", k2g, 1, 4}}));
  EXPECT_EQ(inner.Reserved("gpu-medium", k2g, ""), 1);  // kept in the replica's own ledger
}

TEST(ReplicaShare, ReplicasDecidingAloneTogetherPromiseNoMoreThanIsFree) {
  for (int free = 0; free <= 7; ++free) {
    InventorySnapshot snapshot = MediumWithFree(free);
    int promised = 0;
    for (int replica = 0; replica < 3; ++replica) {  // three ledgers: no leader to share one
      ReservationLedger ledger(std::chrono::seconds(30));
      LedgerReservations inner(ledger);
      ReplicaShare share(inner, snapshot, 3);
      for (int pod = 0; pod < 10; ++pod) {
        std::string key = std::to_string(replica) + "-" + std::to_string(pod);
        if (share.Commit(key, "ns/" + key, {{"gpu-medium", k2g, 1, free}})) ++promised;
      }
    }
    EXPECT_LE(promised, free) << free << " free";
    EXPECT_EQ(promised, 3 * (free / 3)) << free << " free";
  }
}

TEST(ReplicaShare, OneReplicaIsTheWholeOfWhatIsFree) {
  InventorySnapshot snapshot = MediumWithFree(4);
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations inner(ledger);
  ReplicaShare share(inner, snapshot, 1);
  EXPECT_EQ(share.Reserved("gpu-medium", k2g, ""), 0);
  EXPECT_EQ(share.Reserved("no-such-node", k2g, ""), 0);
  for (int pod = 0; pod < 4; ++pod) {
    EXPECT_TRUE(share.Commit(std::to_string(pod), "ns/p", {{"gpu-medium", k2g, 1, 4}}));
  }
  EXPECT_FALSE(share.Commit("5", "ns/p", {{"gpu-medium", k2g, 1, 4}}));
}

}  // namespace
}  // namespace gpuadmit
