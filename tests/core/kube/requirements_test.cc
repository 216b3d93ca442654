#include "core/kube/requirements.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

using nlohmann::json;

json Container(const std::string& name, json limits, json requests = json::object()) {
  return {
      {"name", name}, {"image", "x"}, {"resources", {{"limits", limits}, {"requests", requests}}}};
}

TEST(ReadPodRequirements, RequestsDefaultToLimitsForExtendedResources) {
  json spec = {{"containers", {Container("a", {{"nvidia.com/gpu", "2"}})}}};
  PodRequirements r = ReadPodRequirements(spec);
  EXPECT_EQ(r.effective, (ResourceList{{"nvidia.com/gpu", 2}}));
}

TEST(ReadPodRequirements, IgnoresResourcesGpuadmitDoesNotManage) {
  json spec = {{"containers", {Container("a", {{"cpu", "500m"}, {"memory", "1Gi"}})}}};
  EXPECT_TRUE(ReadPodRequirements(spec).effective.empty());
}

TEST(ReadPodRequirements, EffectiveIsMaxOfLargestInitAndSumOfAppsPlusOverhead) {
  json spec = {{"initContainers",
                {Container("init-big", {{"nvidia.com/mig-1g.10gb", "3"}}),
                 Container("init-small", {{"nvidia.com/mig-1g.10gb", "1"}})}},
               {"containers",
                {Container("a", {{"nvidia.com/mig-1g.10gb", "1"}}),
                 Container("b", {{"nvidia.com/mig-1g.10gb", "1"}, {"nvidia.com/gpu", "1"}})}},
               {"overhead", {{"nvidia.com/gpu", "1"}}}};
  EXPECT_EQ(ReadPodRequirements(spec).effective,
            (ResourceList{{"nvidia.com/gpu", 2}, {"nvidia.com/mig-1g.10gb", 3}}));
}

TEST(ReadPodRequirements, CpuAndMemoryAreTheSchedulersEffectiveRequestToo) {
  json sidecar = Container("proxy", json::object(), {{"cpu", "250m"}, {"memory", "64Mi"}});
  sidecar["restartPolicy"] = "Always";
  json spec = {{"initContainers", {Container("warm", {{"cpu", "4"}}), sidecar}},
               {"containers",
                {Container("a", {{"cpu", "2"}, {"memory", "1Gi"}}, {{"cpu", "1"}}),
                 Container("b", {{"memory", "512Mi"}})}},
               {"overhead", {{"cpu", "100m"}}}};
  PodRequirements r = ReadPodRequirements(spec);
  // cpu: max(init 4, apps 1 (a's request) + sidecar 0.25) + overhead 0.1; memory: a's limit
  // 1Gi + b's 512Mi + the sidecar's 64Mi.
  EXPECT_EQ(r.compute, (ComputeRequest{4100, (1024 + 512 + 64) * int64_t{1} << 20}));
  EXPECT_TRUE(r.effective.empty());
}

TEST(ReadPodRequirements, SidecarInitContainersAddToAppsAndLaterInits) {
  json sidecar = Container("proxy", {{"nvidia.com/gpu", "1"}});
  sidecar["restartPolicy"] = "Always";
  json spec = {{"initContainers", {sidecar, Container("after", {{"nvidia.com/gpu", "2"}})}},
               {"containers", {Container("a", {{"nvidia.com/gpu", "1"}})}}};
  // init "after" runs beside the sidecar: 3; apps + sidecar: 2.
  EXPECT_EQ(ReadPodRequirements(spec).effective, (ResourceList{{"nvidia.com/gpu", 3}}));
}

TEST(ReadPodRequirements, FractionalOrMalformedQuantitiesAreLeftOutWithAWarning) {
  json spec = {{"containers",
                {Container("a", {{"nvidia.com/mig-2g.20gb", "500m"}}),
                 Container("b", {{"nvidia.com/gpu", "abc"}}),
                 Container("c", {{"nvidia.com/gpu", json::object()}}),
                 Container("d", {{"nvidia.com/gpu", 1}})}}};
  PodRequirements r = ReadPodRequirements(spec);
  EXPECT_EQ(r.effective, (ResourceList{{"nvidia.com/gpu", 1}}));
  ASSERT_EQ(r.warnings.size(), 3u);
  EXPECT_EQ(r.warnings[0],
            "container \"a\" nvidia.com/mig-2g.20gb: quantity \"500m\" is not a whole number, as "
            "extended resources must be");
  EXPECT_EQ(r.warnings[2], "container \"c\" nvidia.com/gpu is not a quantity");
}

TEST(ReadPodRequirements, SpecsOfTheWrongShapeAreReportedNotRead) {
  EXPECT_TRUE(ReadPodRequirements(json("hello")).containers.empty());
  PodRequirements map = ReadPodRequirements(json{{"containers", {{"x", 1}}}});
  EXPECT_TRUE(map.containers.empty());
  EXPECT_EQ(map.warnings, std::vector<std::string>{"spec.containers is not a list"});
  PodRequirements items = ReadPodRequirements(json{{"initContainers", json::array({1, "a"})}});
  EXPECT_TRUE(items.containers.empty());
  EXPECT_EQ(items.warnings, (std::vector<std::string>{"spec.initContainers[0] is not an object",
                                                      "spec.initContainers[1] is not an object"}));
}

}  // namespace
}  // namespace gpuadmit
