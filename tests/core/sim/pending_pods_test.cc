#include "core/sim/pending_pods.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fakes/sim_node.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char k1g[] = "nvidia.com/mig-1g.10gb";

// Room enough in cpu, memory and pods: only the extended resources decide.
SimNode Node(const std::string& name, ResourceList extended) {
  return testing::ReadySimNode(name, {64000, int64_t{1} << 40, 110, std::move(extended)});
}

SimPod Pod(const std::string& resource, int64_t count) {
  return SimPodFromSpec(
      {{"containers",
        {{{"name", "c"},
          {"resources",
           {{"requests", {{"cpu", "1"}}}, {"limits", {{resource, std::to_string(count)}}}}}}}}});
}

// The same steps every run: a fixed linear congruential sequence.
struct Steps {
  uint64_t x = 12345;
  uint64_t operator()(uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  }
};

TEST(NodeSet, MembersAreFoundInOrderFromAnyPoint) {
  NodeSet set(200);
  for (size_t i : {3u, 64u, 65u, 199u}) set.Set(i, true);
  set.Set(65, true);  // twice: counted once
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(set.NextFrom(0), 3u);
  EXPECT_EQ(set.NextFrom(4), 64u);
  EXPECT_EQ(set.NextFrom(66), 199u);
  EXPECT_EQ(set.NextFrom(200), NodeSet::npos);
  set.Set(199, false);
  EXPECT_EQ(set.NextFrom(66), NodeSet::npos);
  EXPECT_EQ(set.size(), 3u);
}

TEST(RoomIndex, KnowsWhenNoNodeHasRoomAndWhichNodesHave) {
  std::vector<SimNode> nodes = {Node("a", {{kGpu, 8}}), Node("b", {{kGpu, 4}}),
                                Node("c", {{k1g, 7}})};
  RoomIndex room(nodes);
  EXPECT_TRUE(room.MayFit(Pod(kGpu, 8)));
  EXPECT_FALSE(room.MayFit(Pod(kGpu, 9)));
  EXPECT_FALSE(room.MayFit(Pod("nvidia.com/mig-3g.40gb", 1)));  // offered nowhere
  const NodeSet* four = room.WithRoomFor(Pod(kGpu, 4));
  ASSERT_NE(four, nullptr);
  EXPECT_EQ(four->size(), 2u);
  Bind(Pod(kGpu, 6), nodes[0]);
  room.Update(0, nodes[0]);
  EXPECT_FALSE(room.MayFit(Pod(kGpu, 5)));
  EXPECT_EQ(room.WithRoomFor(Pod(kGpu, 4))->NextFrom(0), 1u);  // only b has 4 left
  Unbind(Pod(kGpu, 6), nodes[0]);
  room.Update(0, nodes[0]);
  EXPECT_TRUE(room.MayFit(Pod(kGpu, 5)));
  EXPECT_EQ(room.WithRoomFor(SimPodFromSpec({{"containers", json::array()}})), nullptr);
}

// Schedule among the nodes with room chooses, and moves its search on, as the walk over every
// node does, step after step of binds and departures on a cluster of mixed nodes.
TEST(RoomIndex, ScheduleAmongTheNodesWithRoomIsTheWholeWalk) {
  std::vector<SimNode> nodes;
  for (int i = 0; i < 600; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "n%03d", i);
    nodes.push_back(i % 3 == 2 ? Node(name, {{k1g, 7}}) : Node(name, {{kGpu, 8}}));
  }
  RoomIndex room(nodes);
  SchedulerSearch whole, among;
  Steps next;
  std::vector<std::pair<SimPod, size_t>> bound;
  for (int step = 0; step < 3000; ++step) {
    if (!bound.empty() && next(3) == 0) {
      size_t k = next(bound.size());
      Unbind(bound[k].first, nodes[bound[k].second]);
      room.Update(bound[k].second, nodes[bound[k].second]);
      bound.erase(bound.begin() + static_cast<long>(k));
      continue;
    }
    SimPod pod = next(4) == 0 ? Pod(k1g, 1) : Pod(kGpu, 1 + static_cast<int64_t>(next(8)));
    std::optional<size_t> a = Schedule(pod, nodes, &whole);
    std::optional<size_t> b =
        room.MayFit(pod) ? Schedule(pod, nodes, &among, room.WithRoomFor(pod)) : std::nullopt;
    ASSERT_EQ(a, b) << "step " << step;
    ASSERT_EQ(whole.next_start, among.next_start) << "step " << step;
    if (!a) continue;
    Bind(pod, nodes[*a]);
    room.Update(*a, nodes[*a]);
    bound.emplace_back(pod, *a);
  }
}

TEST(PendingPods, ANodeIsOfferedTheQueuedPodsItHasRoomForInQueueOrder) {
  SimNode node = Node("a", {{kGpu, 8}});
  Bind(Pod(kGpu, 5), node);  // 3 free
  std::vector<SimPod> pods = {Pod(kGpu, 4), Pod(kGpu, 2), Pod(k1g, 1), Pod(kGpu, 1), Pod(kGpu, 2)};
  PendingPods pending;
  for (size_t i = 0; i < pods.size(); ++i) pending.Push(i, pods[i]);
  std::vector<size_t> offered;
  pending.OfferTo(node, [&](size_t i) {
    offered.push_back(i);
    if (!Passes(pods[i], node)) return false;
    Bind(pods[i], node);
    return true;
  });
  // 4 GPUs: no room, never offered; the 2 then the 1 take the room; the second 2 no longer fits
  // its group and is not offered; 1g.10gb is not offered here at all.
  EXPECT_EQ(offered, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(pending.size(), 3u);
  Unbind(Pod(kGpu, 5), node);  // 5 free
  offered.clear();
  pending.OfferTo(node, [&](size_t i) {
    offered.push_back(i);
    return false;
  });
  EXPECT_EQ(offered, (std::vector<size_t>{0, 4}));
}

// OfferTo binds what a scan of the whole queue in order would, on random queues and nodes.
TEST(PendingPods, OfferingIsAScanOfTheWholeQueue) {
  Steps next;
  for (int round = 0; round < 200; ++round) {
    std::vector<SimPod> pods;
    PendingPods pending;
    for (int i = 0; i < 30; ++i) {
      pods.push_back(next(3) == 0 ? Pod(k1g, 1 + static_cast<int64_t>(next(2)))
                                  : Pod(kGpu, 1 + static_cast<int64_t>(next(4))));
      pending.Push(pods.size() - 1, pods.back());
    }
    SimNode a = Node("a", {{kGpu, 8}, {k1g, 2}});
    SimNode b = a;
    std::vector<size_t> by_offer, by_scan;
    pending.OfferTo(a, [&](size_t i) {
      if (!Passes(pods[i], a)) return false;
      Bind(pods[i], a);
      by_offer.push_back(i);
      return true;
    });
    for (size_t i = 0; i < pods.size(); ++i) {
      if (!Passes(pods[i], b)) continue;
      Bind(pods[i], b);
      by_scan.push_back(i);
    }
    ASSERT_EQ(by_offer, by_scan) << "round " << round;
    EXPECT_EQ(pending.size(), pods.size() - by_scan.size());
  }
}

}  // namespace
}  // namespace gpuadmit
