// DraDevices: the DRA devices of the cluster, kept one ResourceSlice, ResourceClaim,
// DeviceClass and ResourceClaimTemplate at a time, and counted per node in the extended
// resources decisions already speak (a whole GPU of NVIDIA's driver is nvidia.com/gpu, a MIG
// device nvidia.com/mig-<profile>), so every decision works the same whether a node's GPUs come
// from the device plugin or from DRA.
//
//   DraDevices dra;
//   dra.UpsertSlice(ReadResourceSlice(slice));
//   dra.UpsertClaim(ReadResourceClaim(claim));
//   for (const auto& [node, counts] : dra.CountByNode()) counts.allocatable ...
//
// Counting: only a pool's newest generation counts (the scheduler ignores older slices). A
// device is used while an allocated claim holds it. A device that draws on shared counters
// (dynamic MIG: every profile a GPU could be cut into is published, and each consumes part of
// the GPU) is free only while what it consumes is left; a resource's free count is how many of
// its devices could still be allocated one after another from what is left, each resource
// counted as if it alone were carved. Devices of slices without a node (network-attached) are
// not counted.
//
// Thread safety: none; one writer owns it (ClusterState).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dra/dra_objects.h"
#include "core/kube/kube_objects.h"
#include "core/kube/resource_list.h"

namespace gpuadmit {

// What one node's DRA devices come to.
struct DraNodeCounts {
  // Devices allocated, plus those that could still be: what the node offers through DRA.
  ResourceList allocatable;
  // Devices held by allocated claims, but for the claims the scheduler makes for a pod's
  // extended resources: that pod's requests count them (as any pod's do).
  ResourceList used;
  std::vector<std::string> pools;  // "driver/pool", in name order
  std::string product;             // its first GPU's productName, as GFD labels it
  int64_t memory_mib = 0;          // a whole GPU's memory capacity
  int64_t gpus_per_pcie_root = 0;  // the most whole GPUs under one PCIe root
  int64_t gpus = 0;                // physical GPUs: whole GPUs, and the parents of MIG devices
  bool operator==(const DraNodeCounts&) const = default;
};

// Adds what a node's DRA devices come to (`counts`) to its facts: each resource the Node's own
// allocatable (the device plugin's) does not list, its pools, and the product, GPU memory and
// GPU count no label gave it.
void AddDraCounts(const DraNodeCounts& counts, NodeFacts& node);

// Takes what `device` consumes from `left`; false (and `left` untouched) when some counter has
// too little, or names a counter set `left` does not have.
bool Consume(const DraDevice& device, CounterAmounts& left);

// One pool's devices on a node, as the scheduler's allocator would find them now.
struct PoolDevices {
  std::string driver;
  std::string pool;
  std::vector<DraDevice> idle;  // held by no claim, in slice-name then device order
  CounterAmounts left;          // the pool's counters, less what held devices consume
};
using NodeDevices = std::vector<PoolDevices>;  // by driver, then pool

// A device an allocated claim holds that counts as used (DraNodeCounts::used).
struct ClaimedDevice {
  std::string claim;      // namespace/name
  std::string owner_pod;  // namespace/name of the Pod it was made for; "" for none
  std::string node;
  std::string resource;  // as DeviceResource names it
  bool operator==(const ClaimedDevice&) const = default;
};

class DraDevices {
 public:
  void UpsertSlice(ResourceSliceRecord slice);
  void DeleteSlice(std::string_view name);
  void ReplaceSlices(std::vector<ResourceSliceRecord> slices);
  void UpsertClaim(ResourceClaimRecord claim);
  void DeleteClaim(std::string_view key);
  void ReplaceClaims(std::vector<ResourceClaimRecord> claims);
  void UpsertClass(DeviceClassRecord device_class);
  void DeleteClass(std::string_view name);
  void ReplaceClasses(std::vector<DeviceClassRecord> classes);
  void UpsertTemplate(ClaimTemplateRecord claim_template);
  void DeleteTemplate(std::string_view key);
  void ReplaceTemplates(std::vector<ClaimTemplateRecord> templates);

  bool empty() const { return slices_.empty(); }
  size_t slice_count() const { return slices_.size(); }
  size_t claim_count() const { return claims_.size(); }

  // Every node with DRA devices, by name. O(devices + allocated devices).
  std::map<std::string, DraNodeCounts, std::less<>> CountByNode() const;

  // Every node's pools, by node name. Held: the devices allocated claims name, and for each
  // claim not yet allocated that asks first of one GPU (ResourceClaimRecord::pinned), the device
  // the allocator's first fit takes on that GPU. O(devices + claims x devices of a node).
  std::map<std::string, NodeDevices, std::less<>> DevicesByNode() const;

  // The devices allocated claims hold that count as used, of the newest generations, in claim
  // then result order: what `report` gives to the pods the claims were made for.
  std::vector<ClaimedDevice> UsedByClaims() const;

  // The DeviceClasses, by name.
  const std::map<std::string, DeviceClassRecord, std::less<>>& classes() const { return classes_; }
  // The ResourceClaimTemplates, by namespace/name: what a pod naming one asks.
  const std::map<std::string, ClaimTemplateRecord, std::less<>>& templates() const {
    return templates_;
  }

 private:
  // Whether the pod the scheduler made `claim` for counts its device `i` itself: asked through
  // a class whose extendedResourceName is `resource`, the name the device counts as.
  bool CountedByItsPod(const ResourceClaimRecord& claim, size_t i, std::string_view resource) const;

  std::map<std::string, ResourceSliceRecord, std::less<>> slices_;
  std::map<std::string, ResourceClaimRecord, std::less<>> claims_;
  std::map<std::string, DeviceClassRecord, std::less<>> classes_;
  std::map<std::string, ClaimTemplateRecord, std::less<>> templates_;
};

}  // namespace gpuadmit
