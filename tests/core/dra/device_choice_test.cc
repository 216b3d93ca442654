// The GPU a one-device claim is steered to: where the allocator's first fit loses the least of
// what could still be carved, on a node of two dynamic-MIG GPUs, one with a 3g.40gb held; and
// what a claim pinned to a GPU, not yet allocated, counts as taking.
#include "core/dra/device_choice.h"

#include <gtest/gtest.h>

#include "core/inventory/inventory.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::DeviceUuid;
using testing::ReadJsonFile;
using testing::SnapshotOf;

SelectorFacts Mig(const std::string& profile) {
  return {.driver = "gpu.nvidia.com", .type = "mig", .profile = profile};
}

const PoolDevices& OnlyPool(const InventorySnapshot& s, const std::string& node) {
  auto it = s.dra_devices().find(node);
  if (it == s.dra_devices().end() || it->second.size() != 1) throw std::runtime_error(node);
  return it->second.front();
}

bool Idle(const PoolDevices& pool, const std::string& device) {
  return std::any_of(pool.idle.begin(), pool.idle.end(),
                     [&](const DraDevice& d) { return d.name == device; });
}

TEST(DeviceChoice, ASmallProfileGoesToTheGpuCarvedAlreadyNotTheFirstFreshOne) {
  json cluster = ReadJsonFile("tests/fixtures/dra/dynamic-mig.json");
  InventorySnapshot s = SnapshotOf(cluster);
  std::optional<GpuChoice> c = ChooseGpu(s.dra_devices(), Mig("1g.10gb"), "");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->node, "h200-dyn");
  EXPECT_EQ(c->gpu, DeviceUuid(cluster, "gpu-1"));
  EXPECT_EQ(c->gpu_device, "gpu-1");
  EXPECT_EQ(c->device, "gpu-1-mig-1g10gb-19-4");  // slices 0-3 are the held 3g.40gb's
  // Unsteered, the allocator takes the first 1g.10gb of the fresh gpu-0 and breaks it up.
  EXPECT_EQ(c->first_fit_device, "gpu-0-mig-1g10gb-19-0");
  EXPECT_LT(c->lost, c->first_fit_lost);
  // On gpu-1: 3 x 1g, 1 x 2g, 1 x 3g could be carved (8/7); after, 2 x 1g (2/7).
  EXPECT_NEAR(c->lost, 6.0 / 7, 1e-9);
  EXPECT_EQ(c->gpus, 2u);
}

TEST(DeviceChoice, AProfileOnlyAFreshGpuCanTakeGoesThere) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/dynamic-mig.json"));
  std::optional<GpuChoice> c = ChooseGpu(s.dra_devices(), Mig("4g.40gb"), "");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->gpu_device, "gpu-0");
  EXPECT_EQ(c->gpus, 1u);
  EXPECT_FALSE(ChooseGpu(s.dra_devices(), Mig("4g.40gb"), "elsewhere").has_value());
}

TEST(DeviceChoice, DevicesCutAlreadyLeaveNothingToSteer) {
  InventorySnapshot s = SnapshotOf(ReadJsonFile("tests/fixtures/dra/seed-cluster.json"));
  EXPECT_FALSE(ChooseGpu(s.dra_devices(), Mig("1g.10gb"), "").has_value());
  EXPECT_FALSE(s.dra_devices().empty());
}

TEST(DeviceChoice, HeldDevicesAndPinnedClaimsTakeTheirCounters) {
  json cluster = ReadJsonFile("tests/fixtures/dra/dynamic-mig.json");
  {
    InventorySnapshot s = SnapshotOf(cluster);
    const PoolDevices& pool = OnlyPool(s, "h200-dyn");
    EXPECT_FALSE(Idle(pool, "gpu-1-mig-3g40gb-9-0"));  // allocated to ml/held
    EXPECT_EQ(pool.left.at("gpu-1-counter-set").at("memory-slice-0"), 0);
    EXPECT_EQ(pool.left.at("gpu-1-counter-set").at("memory-slice-4"), 1000);
    EXPECT_TRUE(Idle(pool, "gpu-0-mig-1g10gb-19-0"));
  }
  // A claim not yet allocated whose first alternative names gpu-0: the allocator's first fit
  // there (1g.10gb at slice 0) counts as taken.
  json pinned = {{"name", "gpu"},
                 {"firstAvailable",
                  json::array({{{"name", "1g-10gb-steered"},
                                {"deviceClassName", "mig.nvidia.com"},
                                {"selectors",
                                 json::array({{{"cel",
                                                {{"expression",
                                                  "device.attributes['gpu.nvidia.com'].profile == "
                                                  "'1g.10gb' && device.attributes['gpu.nvidia.com']"
                                                  ".parentUUID == '" +
                                                      DeviceUuid(cluster, "gpu-0") + "'"}}}}})}}})}};
  cluster["items"].push_back({{"apiVersion", "resource.k8s.io/v1"},
                              {"kind", "ResourceClaim"},
                              {"metadata", {{"name", "pending"}, {"namespace", "ml"}}},
                              {"spec", {{"devices", {{"requests", json::array({pinned})}}}}}});
  InventorySnapshot s = SnapshotOf(cluster);
  const PoolDevices& pool = OnlyPool(s, "h200-dyn");
  EXPECT_FALSE(Idle(pool, "gpu-0-mig-1g10gb-19-0"));
  EXPECT_EQ(pool.left.at("gpu-0-counter-set").at("memory-slice-0"), 0);
  EXPECT_EQ(pool.left.at("gpu-0-counter-set").at("memory-slice-1"), 1000);
}

}  // namespace
}  // namespace gpuadmit
