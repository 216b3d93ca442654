#include "core/inventory/workload_mix.h"

#include <bit>

namespace gpuadmit {
namespace {

int64_t RoundUpToPowerOfTwo(int64_t v) {
  if (v <= 0) return 0;
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v)));
}

int Rank(const std::string& resource) {
  if (resource == "nvidia.com/gpu") return 0;
  return resource.starts_with("nvidia.com/mig-") ? 1 : 2;
}

}  // namespace

std::optional<PodShape> ShapeOf(const PodRecord& pod) {
  const ResourceList::value_type* primary = nullptr;
  for (const auto& entry : pod.need) {
    if (entry.second <= 0 || !IsManagedResource(entry.first)) continue;
    if (primary == nullptr || Rank(entry.first) < Rank(primary->first)) primary = &entry;
  }
  if (primary == nullptr) return std::nullopt;
  return PodShape{primary->first, primary->second, RoundUpToPowerOfTwo(pod.compute.cpu_milli),
                  RoundUpToPowerOfTwo(pod.compute.memory_bytes)};
}

}  // namespace gpuadmit
