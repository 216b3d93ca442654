// The capacity queue in the replay (issue 18, "Waiting for GPUs"): a hand-made stream on two
// nodes of 4 GPUs where a small pod, run at once without the queue, would keep a large one
// waiting; every wait computed by hand.
//
//   t=0  A asks 4, runs 100 s: n0 (the first of two empty nodes)
//   t=1  B asks 2, runs 50 s:  n1 (n0 has no GPU left)
//   t=2  C asks 4, runs 10 s:  fits nowhere
//   t=3  D asks 2, runs 100 s: fits on n1's last 2
// Without the queue D takes n1's 2 at once, so when B leaves (51.05) n1 has 2 and C waits for A
// (100.05). With it C holds n1, D waits behind C, C runs when B leaves and D when C leaves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/sim/replay.h"
#include "core/sim/simulation_report.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

json Node(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status",
           {{"allocatable",
             {{"cpu", "32"}, {"memory", "128Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

Arrival GpuPod(const std::string& name, int gpus, double at, double duration) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec",
               {{"containers",
                 {{{"name", "main"},
                   {"image", "busybox"},
                   {"resources",
                    {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                     {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  return {at, duration, pod};
}

const json kCluster = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {Node("n0"), Node("n1")}}};

std::vector<Arrival> Stream() {
  return {GpuPod("a", 4, 0, 100), GpuPod("b", 2, 1, 50), GpuPod("c", 4, 2, 10),
          GpuPod("d", 2, 3, 100)};
}

// gpuadmit with nothing but the queue to decide: no sharing, no placement.
Policy QueuePolicyOnly(bool enabled, int64_t timeout_seconds) {
  Policy p;
  p.sharing.enabled = false;
  p.placement.enabled = false;
  p.queue.enabled = enabled;
  p.queue.timeout_seconds = timeout_seconds;
  return p;
}

void ExpectWaits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << i;
}

TEST(ReplayQueue, WithoutTheQueueTheSmallPodRunsAtOnceAndTheLargeOneWaitsForTheFirstToLeave) {
  Policy policy = QueuePolicyOnly(false, 300);
  auto r = Replay(kCluster, Stream(), &policy, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Bound in order A, B, D (at 3.05), C (at 100.05 when A leaves).
  ExpectWaits(r.value().waits, {0.05, 0.05, 0.05, 98.05});
  EXPECT_EQ(r.value().queued, 0);
  json run = RunJson("off", r.value(), std::nullopt);
  EXPECT_NEAR(run["wait_seconds_mean"].get<double>(), (0.15 + 98.05) / 4, 1e-9);
  EXPECT_NEAR(run["wait_seconds_p99"].get<double>(), 98.05, 1e-9);
}

TEST(ReplayQueue, TheLargePodHoldsTheNodeTheSmallOneWaitsBehindItAndEachRunsWhenRoomFrees) {
  Policy policy = QueuePolicyOnly(true, 300);
  auto r = Replay(kCluster, Stream(), &policy, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  // C held n1 from 2.05 and runs when B leaves (51.05); D runs on n1 when C leaves (61.05),
  // before A leaves n0 (100.05): both wait less than C's 98.05 without the queue.
  ExpectWaits(r.value().waits, {0.05, 0.05, 49.05, 58.05});
  EXPECT_EQ(r.value().queued, 2);
  EXPECT_EQ(r.value().queue_timeouts, 0);
  EXPECT_EQ(r.value().placed, 4);
  EXPECT_EQ(r.value().pending, 0);
  json run = RunJson("queue", r.value(), std::nullopt);
  EXPECT_NEAR(run["wait_seconds_mean"].get<double>(), (0.1 + 49.05 + 58.05) / 4, 1e-9);
  EXPECT_EQ(run["queued_pods"], 2);
  EXPECT_EQ(run["queue_timeouts"], 0);
}

TEST(ReplayQueue, AtItsTimeoutTheHeadGoesToTheSchedulerAndThePodBehindFitsInWhatItHeld) {
  Policy policy = QueuePolicyOnly(true, 30);
  auto r = Replay(kCluster, Stream(), &policy, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  // At 32 C has waited 30 s: released to the scheduler, which finds no room (Pending); D, in
  // the same lift, fits in n1's 2 that C held and runs (29 s). C runs when A leaves (100.05).
  ExpectWaits(r.value().waits, {0.05, 0.05, 29, 98.05});
  EXPECT_EQ(r.value().queued, 2);
  EXPECT_EQ(r.value().queue_timeouts, 1);
  EXPECT_EQ(r.value().pending, 0);
}

TEST(ReplayQueue, PodsOfNamespacesTheQueueDoesNotListOrThatAreExemptArePendingAsWithoutIt) {
  Policy listed = QueuePolicyOnly(true, 300);
  listed.queue.namespaces = {"other"};
  Policy exempt = QueuePolicyOnly(true, 300);
  exempt.exempt_namespaces = {"ml"};
  for (const Policy* policy : {&listed, &exempt}) {
    auto r = Replay(kCluster, Stream(), policy, {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    ExpectWaits(r.value().waits, {0.05, 0.05, 0.05, 98.05});
    EXPECT_EQ(r.value().queued, 0);
  }
}

}  // namespace
}  // namespace gpuadmit
