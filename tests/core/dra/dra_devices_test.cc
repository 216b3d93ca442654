// DRA devices counted per node: the seed's two H200 nodes cut statically, dynamic MIG drawing on
// shared counters, pool generations, the scheduler's claims for extended resources, and the
// selectors read off CEL.
#include "core/dra/dra_devices.h"

#include <gtest/gtest.h>

#include "core/inventory/cluster_state.h"
#include "core/inventory/inventory.h"
#include "core/inventory/inventory_gauges.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadJsonFile;
using testing::SnapshotOf;

constexpr char k1g[] = "nvidia.com/mig-1g.10gb";
constexpr char k2g[] = "nvidia.com/mig-2g.20gb";

const NodeInventory& NodeOf(const InventorySnapshot& s, const std::string& name) {
  const NodeInventory* n = s.FindNode(name);
  if (n == nullptr) throw std::runtime_error("no node " + name);
  return *n;
}

// A claim in `ns` holding `device` of the pool `pool` (NVIDIA's driver); with
// `extended_resource_class`, the claim kube-scheduler makes for a pod's extended resource backed
// by that DeviceClass.
json HeldBy(const std::string& name, const std::string& pool, const std::string& device,
            const std::string& extended_resource_class = "") {
  const std::string request = extended_resource_class.empty() ? "gpu" : "container-0-request-0";
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "ml"}}},
                {"status",
                 {{"allocation",
                   {{"devices",
                     {{"results", json::array({{{"request", request},
                                                {"driver", "gpu.nvidia.com"},
                                                {"pool", pool},
                                                {"device", device}}})}}}}}}}};
  if (!extended_resource_class.empty()) {
    claim["metadata"]["annotations"] = {{"resource.kubernetes.io/extended-resource-claim", "true"}};
    claim["spec"]["devices"]["requests"] =
        json::array({{{"name", request},
                      {"exactly", {{"deviceClassName", extended_resource_class}, {"count", 1}}}}});
  }
  return claim;
}

// A DeviceClass of NVIDIA's MIG devices of one profile that backs `extended_resource`.
json ProfileClass(const std::string& name, const std::string& profile,
                  const std::string& extended_resource) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"extendedResourceName", extended_resource},
            {"selectors", json::array({{{"cel",
                                         {{"expression",
                                           "device.attributes['gpu.nvidia.com'].type == 'mig' && "
                                           "device.attributes['gpu.nvidia.com'].profile == '" +
                                               profile + "'"}}}}})}}}};
}

TEST(DraDevices, SeedClusterCountsItsMigDevicesAsExtendedResourcesLessTheClaimed) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  const NodeInventory& small = NodeOf(s, "h200-small");
  const NodeInventory& medium = NodeOf(s, "h200-medium");
  EXPECT_EQ(small.facts->allocatable, (ResourceList{{k1g, 28}}));
  EXPECT_EQ(medium.facts->allocatable, (ResourceList{{k1g, 4}, {k2g, 12}}));
  EXPECT_EQ(medium.facts->dra_allocatable, medium.facts->allocatable);
  EXPECT_EQ(medium.used, (ResourceList{{k2g, 1}}));  // the claim ml/held
  EXPECT_EQ(medium.Free(k2g), 11);
  EXPECT_EQ(medium.facts->dra_pools, std::vector<std::string>{"gpu.nvidia.com/h200-medium"});
  EXPECT_EQ(medium.Product(), "NVIDIA-H200");
  EXPECT_EQ(medium.facts->gpu.count, 4);  // the MIG devices' parents
  EXPECT_EQ(small.facts->gpu.count, 4);
  ASSERT_EQ(s.NodesOffering(k2g).size(), 1u);
  EXPECT_EQ(s.device_classes().size(), 2u);
  EXPECT_EQ(s.device_classes().at("mig.nvidia.com").selects.type, "mig");
}

TEST(DraDevices, TheGaugesSayWhichPartOfAllocatableIsDra) {
  InventoryGauges g = ComputeInventoryGauges(
      SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json")), {}, false);
  EXPECT_EQ(g.cluster.at(k2g),
            (ResourceGauges{.allocatable = 12, .used = 1, .free = 11, .dra = 12}));
  EXPECT_EQ(g.cluster.at(k1g).dra, 32);
}

TEST(DraDevices, DynamicMigCountsWhatTheCountersLeaveForEachProfile) {
  json cluster = ReadJsonFile("tests/fixtures/dra/partitionable.json");
  {
    InventorySnapshot s = SnapshotOf(cluster);
    const NodeInventory& n = NodeOf(s, "a100-dyn");
    EXPECT_EQ(n.facts->allocatable,
              (ResourceList{{"nvidia.com/gpu", 1},
                            {k1g, 7},
                            {k2g, 3},
                            {"nvidia.com/mig-3g.40gb", 2},
                            {"nvidia.com/mig-4g.40gb", 1},
                            {"nvidia.com/mig-7g.80gb", 1}}));
    EXPECT_EQ(n.facts->gpu.memory_mib, 80 * 1024);
  }
  // A 3g.40gb on memory slices 0-3 leaves slices 4-7: three 1g.10gb (a 1g starts at 0-6), one
  // 2g.20gb (at 4), one more 3g.40gb, and no 4g, 7g or whole GPU.
  cluster["items"].push_back(HeldBy("big", "a100-dyn", "gpu-0-mig-3g40gb-9-0"));
  InventorySnapshot s = SnapshotOf(cluster);
  const NodeInventory& n = NodeOf(s, "a100-dyn");
  for (auto [resource, free] : {std::pair{"nvidia.com/gpu", 0}, {k1g, 3}, {k2g, 1},
                                {"nvidia.com/mig-3g.40gb", 1}, {"nvidia.com/mig-4g.40gb", 0},
                                {"nvidia.com/mig-7g.80gb", 0}}) {
    EXPECT_EQ(n.Free(resource), free) << resource;
  }
  EXPECT_EQ(n.used, (ResourceList{{"nvidia.com/mig-3g.40gb", 1}}));
}

TEST(DraDevices, DevicesHeldPastTheirCountersLeaveNothingAndNoNegativeCount) {
  // The whole GPU and a 1g.10gb on its first slice, both held: more than the GPU has.
  json cluster = ReadJsonFile("tests/fixtures/dra/partitionable.json");
  cluster["items"].push_back(HeldBy("whole", "a100-dyn", "gpu-0"));
  cluster["items"].push_back(HeldBy("small", "a100-dyn", "gpu-0-mig-1g10gb-19-0"));
  InventorySnapshot s = SnapshotOf(cluster);
  const NodeInventory& n = NodeOf(s, "a100-dyn");
  for (const auto& [resource, count] : n.facts->allocatable) {
    EXPECT_EQ(n.Free(resource), 0) << resource;
    EXPECT_GE(count, 0) << resource;
  }
  EXPECT_EQ(n.used, (ResourceList{{"nvidia.com/gpu", 1}, {k1g, 1}}));
}

TEST(DraDevices, OnlyAPoolsNewestGenerationCounts) {
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  for (json& item : cluster["items"]) {
    if (item["kind"] != "ResourceSlice" || item["spec"]["nodeName"] != "h200-small") continue;
    json newer = item;
    newer["metadata"]["name"] = "h200-small-gpu.nvidia.com-2";
    newer["spec"]["pool"]["generation"] = 2;
    newer["spec"]["devices"] = json::array({item["spec"]["devices"][0]});
    cluster["items"].push_back(newer);
    break;
  }
  InventorySnapshot s = SnapshotOf(cluster);
  EXPECT_EQ(NodeOf(s, "h200-small").facts->allocatable, (ResourceList{{k1g, 1}}));
}

TEST(DraDevices, ClaimsForTheDevicePluginsResourceNamesAreLeftToTheirPods) {
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  cluster["items"].push_back(ProfileClass("mig-1g.10gb.nvidia.com", "1g.10gb", k1g));
  cluster["items"].push_back(
      HeldBy("pod-extended", "h200-small", "gpu-0-mig-1g10gb-19-0", "mig-1g.10gb.nvidia.com"));
  InventorySnapshot s = SnapshotOf(cluster);
  const NodeInventory& small = NodeOf(s, "h200-small");
  EXPECT_EQ(small.facts->allocatable, (ResourceList{{k1g, 28}}));
  EXPECT_EQ(small.used, ResourceList{});  // the pod asking nvidia.com/mig-1g.10gb counts it
}

TEST(DraDevices, ClaimsForExtendedResourcesOfOtherNamesCountTheirDevices) {
  // Asked as deviceclass.resource.kubernetes.io/mig.nvidia.com (every class's implicit name), or
  // through a class whose extendedResourceName is not the device's resource: no request of the
  // pod's counts the device, so the claim does.
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  cluster["items"].push_back(ProfileClass("small-mig.example.com", "1g.10gb", "example.com/mig"));
  cluster["items"].push_back(
      HeldBy("implicit", "h200-small", "gpu-0-mig-1g10gb-19-0", "mig.nvidia.com"));
  cluster["items"].push_back(
      HeldBy("site-name", "h200-small", "gpu-0-mig-1g10gb-19-1", "small-mig.example.com"));
  InventorySnapshot s = SnapshotOf(cluster);
  const NodeInventory& small = NodeOf(s, "h200-small");
  EXPECT_EQ(small.facts->allocatable, (ResourceList{{k1g, 28}}));
  EXPECT_EQ(small.used, (ResourceList{{k1g, 2}}));
}

TEST(DraDevices, TheNodesOwnAllocatableWinsForAResourceItLists) {
  json cluster = ReadJsonFile("tests/fixtures/dra/seed-cluster.json");
  for (json& item : cluster["items"]) {
    if (item["kind"] == "Node" && item["metadata"]["name"] == "h200-small") {
      item["status"]["allocatable"][k1g] = "5";
    }
  }
  cluster["items"].push_back(HeldBy("c", "h200-small", "gpu-0-mig-1g10gb-19-0"));
  InventorySnapshot s = SnapshotOf(cluster);
  const NodeInventory& small = NodeOf(s, "h200-small");
  EXPECT_EQ(small.facts->allocatable, (ResourceList{{k1g, 5}}));
  EXPECT_EQ(small.facts->dra_allocatable, ResourceList{});
  EXPECT_EQ(small.used, ResourceList{});
}

TEST(DraSelectors, ReadsTheComparisonsOfNvidiasClassesAndClaims) {
  SelectorFacts f;
  ReadSelector(
      "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", f);
  ReadSelector("device.attributes[\"gpu.nvidia.com\"].profile==\"2g.20gb\"", f);
  ReadSelector("device.attributes['gpu.nvidia.com']['productName'] == 'NVIDIA H200'", f);
  EXPECT_EQ(f.driver, "gpu.nvidia.com");
  EXPECT_EQ(f.type, "mig");
  EXPECT_EQ(f.profile, "2g.20gb");
  EXPECT_EQ(f.product, "NVIDIA H200");
  SelectorFacts none;
  ReadSelector("device.attributes['gpu.nvidia.com'].typeName == 'x' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0", none);
  EXPECT_EQ(none.type, "");
  EXPECT_EQ(none.profile, "");
}

TEST(DraSelectors, DeviceResourceNamesNvidiasDevicesAsTheDevicePluginDoes) {
  DraDevice gpu{.name = "gpu-0", .type = "gpu"};
  DraDevice mig{.name = "gpu-0-mig-1g10gb-19-0", .type = "mig", .profile = "1g.10gb"};
  DraDevice channel{.name = "channel-0", .type = "imex-channel"};
  EXPECT_EQ(DeviceResource("gpu.nvidia.com", gpu), "nvidia.com/gpu");
  EXPECT_EQ(DeviceResource("gpu.nvidia.com", mig), "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(DeviceResource("gpu.nvidia.com", channel), "");
  EXPECT_EQ(DeviceResource("gpu.example.com", gpu), "");
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(DraReservations, APodOfClaimsKeepsItsReservationUntilItsClaimIsAllocated) {
  ClusterState state("gpuadmit.io/reservation");
  PodRecord pod;
  pod.key = "ml/burst-0";
  pod.reservation = "uid-1";
  pod.names_claims = true;
  state.UpsertPod(pod);
  EXPECT_EQ(state.TakeArrivedReservations(), std::vector<std::string>{});  // counts nothing yet
  ResourceClaimRecord claim{.key = "ml/burst-0-gpu-x", .owner_pod = "ml/burst-0"};
  state.UpsertClaim(claim);  // made, not allocated
  EXPECT_EQ(state.TakeArrivedReservations(), std::vector<std::string>{});
  claim.allocated = {{"gpu.nvidia.com", "h200-medium", "gpu-0-mig-2g20gb-14-0"}};
  state.UpsertClaim(claim);
  EXPECT_EQ(state.TakeArrivedReservations(), std::vector<std::string>{"uid-1"});
  // A pod asking an extended resource is counted, so its arrival ends its reservation.
  PodRecord extended = pod;
  extended.key = "ml/plain";
  extended.reservation = "uid-2";
  extended.need = ResourceList{{"nvidia.com/gpu", 1}};
  state.UpsertPod(extended);
  EXPECT_EQ(state.TakeArrivedReservations(), std::vector<std::string>{"uid-2"});
}

TEST(DraReservations, APodWaitingForItsClaimsKeepsItsReservationUntilBoundOrUnschedulable) {
  using Keys = std::set<std::string, std::less<>>;
  ClusterState state("gpuadmit.io/reservation");
  PodRecord pod;
  pod.key = "ml/burst-0";
  pod.reservation = "uid-1";
  pod.names_claims = true;
  pod.queued = std::make_shared<const QueuedFacts>();
  state.UpsertPod(pod);
  PodRecord plain = pod;  // a pod of extended resources: its need counts it once it arrives
  plain.key = "ml/plain";
  plain.reservation = "uid-2";
  plain.names_claims = false;
  plain.need = ResourceList{{"nvidia.com/gpu", 1}};
  state.UpsertPod(plain);
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{"uid-1"});
  PodRecord stuck = pod;
  stuck.queued = std::make_shared<const QueuedFacts>(QueuedFacts{.unschedulable = true});
  state.UpsertPod(stuck);  // the scheduler found no node: it counts nowhere, as a queued pod
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{});
  state.UpsertPod(pod);
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{"uid-1"});
  PodRecord bound = pod;
  bound.node = "h200-medium";
  bound.queued = nullptr;
  state.UpsertPod(bound);
  EXPECT_EQ(state.WaitingClaimReservations(), Keys{});
}

}  // namespace
}  // namespace gpuadmit
