// The capacity queue (core/inventory/capacity_queue.h): order, holds, backfill, timeout, with
// every case computed by hand.
#include "core/inventory/capacity_queue.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";

NodeRoom Room(const std::string& name, int64_t allocatable, int64_t free) {
  return {name, {{kGpu, allocatable}}, {{kGpu, free}}};
}

QueuedPod Pod(const std::string& key, int64_t gpus, double arrived, int32_t priority = 0,
              std::vector<size_t> nodes = {}) {
  return {key, priority, arrived, {{kGpu, gpus}}, std::move(nodes)};
}

TEST(CapacityQueue, ALargePodAtTheHeadHoldsTheNodeClosestToFittingAndSmallOnesBackfillElsewhere) {
  CapacityQueue queue(300);
  ASSERT_TRUE(queue.Add(Pod("ml/big", 8, 0)));
  ASSERT_TRUE(queue.Add(Pod("ml/small-1", 1, 1)));
  ASSERT_TRUE(queue.Add(Pod("ml/small-2", 1, 2)));
  ASSERT_TRUE(queue.Add(Pod("ml/small-3", 1, 3)));
  // n0 has 2 free, n1 3: big fits on neither and holds n1 (the most free); the smalls may use
  // n0's 2 only, so small-3 waits although n1 has room for it.
  std::vector<NodeRoom> nodes = {Room("n0", 8, 2), Room("n1", 8, 3)};
  EXPECT_EQ(queue.Lift(nodes, 10), (std::vector<LiftedPod>{
                                       {"ml/small-1", LiftReason::kCapacity, 0, 9},
                                       {"ml/small-2", LiftReason::kCapacity, 0, 8},
                                   }));
  EXPECT_EQ(queue.hold(), (Hold{"ml/big", 1}));
  EXPECT_EQ(queue.size(), 2u);
  // n1 frees 5 more: big takes the 8 it waited for; small-3 still finds nothing (n0 is full).
  nodes = {Room("n0", 8, 0), Room("n1", 8, 8)};
  EXPECT_EQ(queue.Lift(nodes, 20),
            (std::vector<LiftedPod>{{"ml/big", LiftReason::kCapacity, 1, 20}}));
  EXPECT_EQ(queue.hold(), (Hold{"ml/small-3", 0}));  // ties in free go to the first node
  EXPECT_EQ(queue.size(), 1u);
}

TEST(CapacityQueue, WithoutTheHoldTheSmallPodsWouldTakeWhatTheHeadWaitsFor) {
  // The same cluster with big gone: n1's 3 free go to the smalls, best fit first (n0's 2).
  CapacityQueue queue(300);
  queue.Add(Pod("ml/small-1", 1, 1));
  queue.Add(Pod("ml/small-2", 1, 2));
  queue.Add(Pod("ml/small-3", 1, 3));
  std::vector<NodeRoom> nodes = {Room("n0", 8, 2), Room("n1", 8, 3)};
  EXPECT_EQ(queue.Lift(nodes, 3), (std::vector<LiftedPod>{
                                      {"ml/small-1", LiftReason::kCapacity, 0, 2},
                                      {"ml/small-2", LiftReason::kCapacity, 0, 1},
                                      {"ml/small-3", LiftReason::kCapacity, 1, 0},
                                  }));
  EXPECT_EQ(queue.hold(), std::nullopt);
}

TEST(CapacityQueue, BackfillTakesOnlyWhatIsLeftOnTheHeldNodeAfterTheHeadsAsk) {
  // The head asks 4 GPUs and 0 of n0's 3 are left for others; n0's cpu beyond the head's ask is.
  CapacityQueue queue(300);
  queue.Add({"ml/head", 0, 0, {{kGpu, 4}, {"cpu", 1000}}, {}});
  queue.Add({"ml/cpu-only", 0, 1, {{"cpu", 2000}}, {}});
  queue.Add({"ml/one-gpu", 0, 2, {{kGpu, 1}, {"cpu", 100}}, {}});
  std::vector<NodeRoom> nodes = {{"n0", {{kGpu, 8}, {"cpu", 4000}}, {{kGpu, 3}, {"cpu", 4000}}}};
  EXPECT_EQ(queue.Lift(nodes, 5),
            (std::vector<LiftedPod>{{"ml/cpu-only", LiftReason::kCapacity, 0, 4}}));
  EXPECT_EQ(queue.hold(), (Hold{"ml/head", 0}));
}

TEST(CapacityQueue, HigherPriorityGoesFirstThenArrivalThenNameOnEqualArrival) {
  CapacityQueue queue(300);
  queue.Add(Pod("b/low-early", 1, 0, 0));
  queue.Add(Pod("z/high-late", 1, 5, 100));
  queue.Add(Pod("b/tie", 1, 3, 0));
  queue.Add(Pod("a/tie", 1, 3, 0));  // added after b/tie, same second: name decides
  std::vector<NodeRoom> nodes = {Room("n0", 8, 3)};
  EXPECT_EQ(queue.Lift(nodes, 6), (std::vector<LiftedPod>{
                                      {"z/high-late", LiftReason::kCapacity, 0, 1},
                                      {"b/low-early", LiftReason::kCapacity, 0, 6},
                                      {"a/tie", LiftReason::kCapacity, 0, 3},
                                  }));
  EXPECT_EQ(queue.hold(), (Hold{"b/tie", 0}));
}

TEST(CapacityQueue, APodIsLiftedForItsTimeoutWhenItHasWaitedThatLongAndNotBefore) {
  CapacityQueue queue(300);
  queue.Add(Pod("ml/a", 8, 10));
  queue.Add(Pod("ml/b", 8, 20));
  EXPECT_EQ(queue.NextTimeout(), 310);
  std::vector<NodeRoom> nodes = {Room("n0", 8, 0)};
  EXPECT_TRUE(queue.Lift(nodes, 309.5).empty());
  EXPECT_EQ(queue.Lift(nodes, 310),
            (std::vector<LiftedPod>{{"ml/a", LiftReason::kTimeout, 0, 300}}));
  EXPECT_EQ(queue.NextTimeout(), 320);
  EXPECT_EQ(queue.hold(), (Hold{"ml/b", 0}));
}

TEST(CapacityQueue, APodNoAllowedNodeCouldEverTakeIsLiftedAtOnceAsUnplaceable) {
  CapacityQueue queue(300);
  queue.Add(Pod("ml/sixteen", 16, 0));
  queue.Add(Pod("ml/only-n0", 4, 1, 0, {0}));  // n0 has 2 allocatable, n1 (8) is not allowed
  queue.Add(Pod("ml/fits-later", 8, 2));
  std::vector<NodeRoom> nodes = {Room("n0", 2, 2), Room("n1", 8, 0)};
  EXPECT_EQ(queue.Lift(nodes, 3), (std::vector<LiftedPod>{
                                      {"ml/sixteen", LiftReason::kUnplaceable, 0, 3},
                                      {"ml/only-n0", LiftReason::kUnplaceable, 0, 2},
                                  }));
  EXPECT_EQ(queue.hold(), (Hold{"ml/fits-later", 1}));
  EXPECT_EQ(LiftReasonName(LiftReason::kUnplaceable), "unplaceable");
  EXPECT_EQ(LiftReasonName(LiftReason::kTimeout), "timeout");
}

TEST(CapacityQueue, APodIsLiftedOnlyOntoNodesItMayUseWithTheLeastLeftOver) {
  CapacityQueue queue(300);
  queue.Add(Pod("ml/pinned", 2, 0, 0, {2}));
  queue.Add(Pod("ml/any", 2, 1));
  std::vector<NodeRoom> nodes = {Room("n0", 8, 5), Room("n1", 8, 2), Room("n2", 8, 4)};
  EXPECT_EQ(queue.Lift(nodes, 1), (std::vector<LiftedPod>{
                                      {"ml/pinned", LiftReason::kCapacity, 2, 1},
                                      {"ml/any", LiftReason::kCapacity, 1, 0},
                                  }));
}

TEST(CapacityQueue, AKeyIsQueuedOnceAndADeletedPodLeaves) {
  CapacityQueue queue(300);
  EXPECT_TRUE(queue.Add(Pod("ml/a", 1, 0)));
  EXPECT_FALSE(queue.Add(Pod("ml/a", 2, 5)));
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_TRUE(queue.Remove("ml/a"));
  EXPECT_FALSE(queue.Remove("ml/a"));
  EXPECT_EQ(queue.size(), 0u);
  std::vector<NodeRoom> nodes = {Room("n0", 8, 8)};
  EXPECT_TRUE(queue.Lift(nodes, 1).empty());
}

}  // namespace
}  // namespace gpuadmit
