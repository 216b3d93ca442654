#include "core/inventory/replica_share.h"

namespace gpuadmit {

int64_t ReplicaShare::Reserved(std::string_view node, std::string_view resource,
                               std::string_view except_key) const {
  int64_t reserved = inner_.Reserved(node, resource, except_key);
  const NodeInventory* n = snapshot_.FindNode(node);
  if (n == nullptr) return reserved;
  int64_t free = n->Free(resource);
  return reserved + (free - Share(free));
}

bool ReplicaShare::Commit(const std::string& key, const std::string& owner,
                          const std::vector<Claim>& claims) {
  std::vector<Claim> bounded = claims;
  for (Claim& c : bounded) c.free = Share(c.free);
  return inner_.Commit(key, owner, bounded);
}

}  // namespace gpuadmit
