// The policy's cap on MPS clients per GPU (sharing.mps.maxClients): a node labelled
// nvidia.com/gpu.sharing-strategy=mps offers its GPUs x replicas of nvidia.com/gpu.shared
// (the device plugin's MPS replicas); under a lower cap, only GPUs x maxClients of them may be
// in use, and the rest count as taken.
//
//   int64_t free = node.Free(resource) - MpsClientExcess(node, resource, policy.sharing);
//
// The free counts decisions read subtract it: FindFreeNode's, placement's ranking, and a claim's
// `free`, which bounds the ledger's reservations.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/inventory/inventory.h"
#include "core/policy/policy.h"

namespace gpuadmit {

// The node's nvidia.com/gpu.shared beyond GPUs x maxClients: 0 for any other resource, without a
// cap, on a node that is not an MPS node, or when the cap is at or above its replicas. The GPUs
// are its nvidia.com/gpu.count label, else its shared replicas over its nvidia.com/gpu.replicas.
int64_t MpsClientExcess(const NodeInventory& node, std::string_view resource,
                        const SharingPolicy& sharing);

}  // namespace gpuadmit
