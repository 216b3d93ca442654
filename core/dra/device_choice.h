// Device choice: which GPU a one-device DRA claim should be allocated on so that it strands the
// least. kube-scheduler's allocator takes, on the node the scheduler chose, the first device in
// the driver's order that the claim selects and that the shared counters still allow; on a GPU
// cut into MIG devices as claims come (dynamic MIG: every placement is published, each drawing on
// the GPU's memory slices), that first fit can block larger profiles another GPU would have lost
// nothing for. A claim cannot name a device (CEL sees no device names), but it can name its GPU
// (`parentUUID`, or `uuid` for a whole GPU): ChooseGpu evaluates, on each GPU, the device the
// allocator's first fit would take there, and picks the GPU where taking it loses the least
// capacity that could still be carved.
//
//   std::optional<GpuChoice> c = ChooseGpu(snapshot.dra_devices(), facts, "h200-a");
//   if (c) pin the claim to c->gpu;   // the allocator's first fit on that GPU takes c->device
//
// Lost capacity: for every resource the GPU's free devices make (nvidia.com/mig-1g.10gb, ...),
// how many of them could be carved one after another before and after, the difference weighed in
// GPU equivalents (core/kube/gpu_equivalents.h). Ties go to the GPU with the least left (best
// fit: whole GPUs stay whole), then to node, pool and device order.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/dra/dra_devices.h"

namespace gpuadmit {

struct GpuChoice {
  std::string node;
  std::string pool;    // driver/pool
  std::string gpu;     // the GPU's uuid, what the claim is pinned to
  std::string gpu_device;  // the whole GPU's own device ("gpu-3"), "" when it publishes none
  std::string device;  // the device the allocator's first fit takes on it
  double lost = 0;     // GPU equivalents of carvable capacity taking it loses
  // The allocator's own pick on the same node (first fit over the whole node), for comparison.
  std::string first_fit_device;
  double first_fit_lost = 0;
  size_t gpus = 0;  // GPUs that could take it
};

// The best GPU for one device `facts` (WithClass) selects, among the nodes of `devices` (only
// `node` when not empty); nullopt when no GPU has such a device free, or when none draws on
// shared counters (then every free device is as good as another: nothing to steer).
std::optional<GpuChoice> ChooseGpu(const std::map<std::string, NodeDevices, std::less<>>& devices,
                                   const SelectorFacts& facts, std::string_view node);

}  // namespace gpuadmit
