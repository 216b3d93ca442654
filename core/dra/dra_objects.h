// What the inventory keeps of Dynamic Resource Allocation objects (resource.k8s.io/v1):
// ResourceSlices (the devices a driver publishes, by node and pool), ResourceClaims (which
// devices an allocation holds) and DeviceClasses (what a class selects, and the extended resource
// it backs). Read through JsonView, like Nodes and Pods (core/kube/kube_objects.h).
//
//   ResourceSliceRecord slice = ReadResourceSlice(item);
//   for (const DraDevice& d : slice.devices) DeviceResource(slice.driver, d);  // nvidia.com/gpu
//
// Selectors are CEL, which gpuadmit does not evaluate: ReadSelector picks out the comparisons
// NVIDIA's documented classes and claims are written with (`device.driver == '...'`,
// `device.attributes['gpu.nvidia.com'].type == 'mig'`, `....profile == '2g.20gb'`,
// `....productName == '...'`), and says nothing of any other expression.
//
// Thread safety: pure functions over values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"

namespace gpuadmit {

// NVIDIA's DRA driver, its device classes, and the attributes gpuadmit reads.
inline constexpr std::string_view kNvidiaGpuDriver = "gpu.nvidia.com";
inline constexpr std::string_view kNvidiaGpuClass = "gpu.nvidia.com";
inline constexpr std::string_view kNvidiaMigClass = "mig.nvidia.com";
// The standard attribute naming a device's PCIe root complex: devices sharing one are close.
inline constexpr std::string_view kPcieRootAttribute = "resource.kubernetes.io/pcieRoot";
// resourceapi.FirstAvailableDeviceRequestMaxSize: the API's limit on a request's firstAvailable
// entries (the scheduler's DynamicResources score of an entry is this less its index).
inline constexpr size_t kMaxSubRequests = 8;
// The annotation the scheduler puts on the claim it makes for a pod's extended resources
// backed by DRA.
inline constexpr std::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";

// Counter amounts by counter set, then counter name, in thousandths (quantities: "10Gi", "1").
using CounterAmounts = std::map<std::string, std::map<std::string, int64_t>, std::less<>>;

struct DraDevice {
  std::string name;     // "gpu-0", "gpu-0-mig-2g.20gb-14-4"
  std::string node;     // the slice's nodeName, or the device's own (perDeviceNodeSelection)
  std::string type;     // attribute `type`: "gpu", "mig"
  std::string profile;  // attribute `profile`: "2g.20gb" (MIG devices)
  std::string product;  // attribute `productName`: "NVIDIA H200"
  std::string pcie_root;       // attribute resource.kubernetes.io/pcieRoot
  std::string uuid;            // attribute `uuid`: a whole GPU's (and a MIG device cut already)
  std::string parent_uuid;     // attribute `parentUUID`: the GPU a MIG device is part of
  int64_t memory_mib = 0;      // capacity `memory`
  CounterAmounts consumes;     // consumesCounters: what allocating it takes from its pool
};

struct ResourceSliceRecord {
  std::string name;
  std::string driver;
  std::string pool;
  int64_t generation = 0;  // only a pool's newest generation counts
  std::string node;        // spec.nodeName; "" for network-attached or per-device slices
  std::vector<DraDevice> devices;
  CounterAmounts counters;  // sharedCounters: what the pool's devices draw on
};

// One device an allocation holds, as status.allocation.devices.results names it.
struct DeviceRef {
  std::string driver;
  std::string pool;
  std::string device;
  auto operator<=>(const DeviceRef&) const = default;
};

// What ReadSelector could read of one or more CEL selectors; "" where it read nothing.
struct SelectorFacts {
  std::string driver;
  std::string type;
  std::string profile;
  std::string product;
  std::string gpu;  // a `parentUUID == '...'` or `uuid == '...'`: the one GPU it may come from
};

// One way a device request may be met: its `exactly`, or one entry of its `firstAvailable`.
struct DeviceAlternative {
  std::string device_class;
  SelectorFacts selects;  // the selectors' own (the class's are not merged in)
  int64_t count = 1;
  bool all = false;  // allocationMode All
};

struct ResourceClaimRecord {
  std::string key;                  // namespace/name
  std::string owner_pod;            // namespace/name of the Pod it was made for; "" for none
  std::vector<DeviceRef> allocated;  // empty until the scheduler allocates it
  // Unallocated: each request's first alternative where it names one GPU (SelectorFacts::gpu);
  // the device the scheduler's first fit takes there counts as taken until the claim is allocated.
  std::vector<DeviceAlternative> pinned;
  // Made by the scheduler for a pod's DRA-backed extended resources: the DeviceClass each
  // device of `allocated` was asked through, in order; empty for any other claim. The pod's own
  // request counts a device when that class's extendedResourceName is the resource the device
  // counts as (nvidia.com/mig-2g.20gb); asked by another name (the implicit
  // deviceclass.resource.kubernetes.io/<class>, a name of the site's), the claim counts it.
  std::vector<std::string> extended_resource_classes;
};

// A ResourceClaimTemplate as pod placement reads it: each request's alternatives, in order.
struct ClaimTemplateRecord {
  std::string key;  // namespace/name
  std::vector<std::vector<DeviceAlternative>> requests;
};

struct DeviceClassRecord {
  std::string name;
  std::string extended_resource;  // spec.extendedResourceName; "" when none
  SelectorFacts selects;          // what its selectors require
};

ResourceSliceRecord ReadResourceSlice(JsonView slice);
ResourceClaimRecord ReadResourceClaim(JsonView claim);
DeviceClassRecord ReadDeviceClass(JsonView device_class);
ClaimTemplateRecord ReadClaimTemplate(JsonView claim_template);
// The alternatives of one device request (`exactly` or `firstAvailable`), in order.
std::vector<DeviceAlternative> ReadAlternatives(JsonView request);

// What `selects` asks with its class's selectors (`device_class`, may be null) filled in where
// it says nothing, and the type a profile or NVIDIA's class names implies.
SelectorFacts WithClass(SelectorFacts selects, std::string_view class_name,
                        const DeviceClassRecord* device_class);
// The same for `alternative`, its class looked up in `classes` (not there: no class selectors).
SelectorFacts WithClassOf(const DeviceAlternative& alternative,
                          const std::map<std::string, DeviceClassRecord, std::less<>>& classes);

// Adds what `cel` requires of the driver, type, profile, product and GPU to `facts` (the first
// comparison of each wins); leaves the rest as it was.
void ReadSelector(std::string_view cel, SelectorFacts& facts);
// The same over a `selectors` list ([{cel: {expression}}]).
void ReadSelectors(JsonView selectors, SelectorFacts& facts);

// The extended resource a device of `driver` counts as: "nvidia.com/gpu" for a whole GPU of
// NVIDIA's driver, "nvidia.com/mig-<profile>" for a MIG device; "" for other devices.
std::string DeviceResource(std::string_view driver, const DraDevice& device);

// The extended resource a request of `facts` (WithClass) asks for, as DeviceResource names it;
// "" when it is not one of NVIDIA's GPUs or MIG devices.
std::string AskedResource(const SelectorFacts& facts);

// Whether `device` of `driver` is one `facts` (WithClass) selects, as far as facts can say.
bool Selects(const SelectorFacts& facts, std::string_view driver, const DraDevice& device);

// The GPU a device is, or is part of: its parentUUID, else its uuid.
inline const std::string& GpuOf(const DraDevice& device) {
  return device.parent_uuid.empty() ? device.uuid : device.parent_uuid;
}

// A product name as GPU Feature Discovery labels it: "NVIDIA H200" -> "NVIDIA-H200".
std::string ProductLabelOf(std::string_view product_name);

}  // namespace gpuadmit
