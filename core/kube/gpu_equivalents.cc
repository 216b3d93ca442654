#include "core/kube/gpu_equivalents.h"

#include <charconv>

#include "core/kube/mig_resource.h"

namespace gpuadmit {

double GpuEquivalents(std::string_view resource, int64_t count, int64_t replicas_per_gpu) {
  if (count <= 0) return 0;
  if (resource == "nvidia.com/gpu") return static_cast<double>(count);
  if (resource == "nvidia.com/gpu.shared") {
    return static_cast<double>(count) / static_cast<double>(std::max<int64_t>(replicas_per_gpu, 1));
  }
  if (auto profile = ParseMigResource(resource)) {
    return static_cast<double>(count) * profile->slices / kMigSlicesPerGpu;
  }
  return 0;
}

int64_t ReplicasPerGpu(const NodeFacts& node) {
  auto it = node.labels.find("nvidia.com/gpu.replicas");
  if (it == node.labels.end()) return 1;
  int64_t replicas = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), replicas);
  if (ec != std::errc() || end != text.data() + text.size() || replicas < 1) return 1;
  return replicas;
}

double GpuEquivalents(const ResourceList& list, int64_t replicas_per_gpu) {
  double sum = 0;
  for (const auto& [resource, count] : list)
    sum += GpuEquivalents(resource, count, replicas_per_gpu);
  return sum;
}

}  // namespace gpuadmit
