#include "core/inventory/workload_mix.h"

namespace gpuadmit {
namespace {

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
  return PodShape{primary->first, primary->second, pod.compute.cpu_milli,
                  pod.compute.memory_bytes, pod.gpu_products};
}

}  // namespace gpuadmit
