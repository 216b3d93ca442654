#include "core/plan/mps_clients.h"

#include <algorithm>

#include "core/kube/gpu_equivalents.h"

namespace gpuadmit {

int64_t MpsClientExcess(const NodeInventory& node, std::string_view resource,
                        const SharingPolicy& sharing) {
  constexpr std::string_view kShared = "nvidia.com/gpu.shared";
  if (resource != kShared || !sharing.mps_max_clients) return 0;
  if (node.facts->gpu.sharing_strategy != "mps") return 0;
  auto it = node.facts->allocatable.find(kShared);
  if (it == node.facts->allocatable.end()) return 0;
  const int64_t replicas = it->second;
  int64_t gpus = node.facts->gpu.count;
  if (gpus <= 0) gpus = replicas / ReplicasPerGpu(*node.facts);
  return std::max<int64_t>(0, replicas - gpus * *sharing.mps_max_clients);
}

}  // namespace gpuadmit
