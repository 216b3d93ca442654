// PlanState: the stages' view of the pod's containers and effective request, copied only at
// their first change.
#include "core/plan/planner.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kMig1g[] = "nvidia.com/mig-1g.10gb";
constexpr char kMig2g[] = "nvidia.com/mig-2g.20gb";

PodRequirements Needs() {
  json spec = {{"containers",
                {{{"name", "a"},
                  {"resources", {{"limits", {{kMig2g, "1"}}}, {"requests", {{kMig2g, "1"}}}}}},
                 {{"name", "b"}, {"resources", {{"limits", {{kMig2g, "2"}}}}}}}}};
  return ReadPodRequirements(spec);
}

TEST(PlanState, ChangesItsOwnCopyOfThePodsContainers) {
  PodRequirements pod = Needs();
  PlanState state{pod.containers, pod.effective};
  EXPECT_EQ(state.containers().size(), pod.containers.size());
  EXPECT_EQ(state.effective(), pod.effective);
  state.SetCount(1, kMig2g, 3, pod.overhead);  // b asks 3 (a limit alone: no request set)
  EXPECT_EQ(state.effective(), (ResourceList{{kMig2g, 4}}));
  EXPECT_EQ(pod.effective, (ResourceList{{kMig2g, 3}}));  // the pod's own, unchanged
  EXPECT_EQ(Get(pod.containers[1].limits, kMig2g), 2);
  EXPECT_TRUE(state.containers()[1].requests.empty());
}

TEST(PlanState, ASwapInACopyLeavesTheOriginalAsItWas) {
  PodRequirements pod = Needs();
  PlanState state{pod.containers, pod.effective};
  PlanState swapped = state;  // as sharing and MIG fallback try a profile
  swapped.Swap(kMig2g, kMig1g, pod.overhead);
  EXPECT_EQ(swapped.effective(), (ResourceList{{kMig1g, 3}}));
  EXPECT_EQ(swapped.containers()[0].requests, (ResourceList{{kMig1g, 1}}));
  EXPECT_EQ(state.effective(), (ResourceList{{kMig2g, 3}}));
  EXPECT_EQ(state.containers()[0].requests, pod.containers[0].requests);
  // A copy of a changed state changes alone as well.
  PlanState again = swapped;
  again.Swap(kMig1g, kMig2g, pod.overhead);
  EXPECT_EQ(swapped.effective(), (ResourceList{{kMig1g, 3}}));
  EXPECT_EQ(again.effective(), (ResourceList{{kMig2g, 3}}));
}

TEST(PlanState, ADefaultStateAsksForNothing) {
  PlanState state;
  EXPECT_TRUE(state.containers().empty());
  EXPECT_TRUE(state.effective().empty());
}

}  // namespace
}  // namespace gpuadmit
