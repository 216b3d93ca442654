#include "core/dra/dra_devices.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gpuadmit {
namespace {

using PoolKey = std::pair<std::string, std::string>;  // driver, pool

// One pool's devices, newest generation only, and its counters.
struct Pool {
  std::vector<const DraDevice*> devices;
  CounterAmounts counters;
};

// Every pool's newest generation, its slices in name order, so counting is repeatable.
std::map<PoolKey, Pool> NewestPools(
    const std::map<std::string, ResourceSliceRecord, std::less<>>& slices) {
  std::map<PoolKey, int64_t> newest;
  for (const auto& [name, s] : slices) {
    auto [it, added] = newest.try_emplace({s.driver, s.pool}, s.generation);
    if (!added) it->second = std::max(it->second, s.generation);
  }
  std::map<PoolKey, Pool> pools;
  for (const auto& [name, s] : slices) {
    PoolKey key{s.driver, s.pool};
    if (s.generation != newest[key]) continue;
    Pool& pool = pools[key];
    for (const DraDevice& d : s.devices) pool.devices.push_back(&d);
    for (const auto& [set, counters] : s.counters) pool.counters[set] = counters;
  }
  return pools;
}

// Takes what `device` consumes from `left`, floored at zero: a held device is held even when
// the pool's counters say it could not be (both amounts are >= 0: no overflow).
void TakeHeld(const DraDevice& device, CounterAmounts& left) {
  for (const auto& [set, counters] : device.consumes) {
    for (const auto& [counter, amount] : counters) {
      int64_t& have = left[set][counter];
      have = have > amount ? have - amount : 0;
    }
  }
}

}  // namespace

void AddDraCounts(const DraNodeCounts& counts, NodeFacts& node) {
  for (const auto& [resource, count] : counts.allocatable) {
    if (node.allocatable.emplace(resource, count).second) node.dra_allocatable[resource] = count;
  }
  node.dra_pools = counts.pools;
  node.dra_gpus_per_pcie_root = counts.gpus_per_pcie_root;
  if (node.product.empty()) {
    node.product = counts.product;
    node.gpu.product = node.product;
  }
  if (node.gpu.memory_mib == 0) node.gpu.memory_mib = counts.memory_mib;
  if (node.gpu.count == 0) node.gpu.count = counts.gpus;
}

bool Consume(const DraDevice& device, CounterAmounts& left) {
  for (const auto& [set, counters] : device.consumes) {
    auto have = left.find(set);
    if (have == left.end()) return false;
    for (const auto& [counter, amount] : counters) {
      auto c = have->second.find(counter);
      if (c == have->second.end() || c->second < amount) return false;
    }
  }
  for (const auto& [set, counters] : device.consumes) {
    for (const auto& [counter, amount] : counters) left[set][counter] -= amount;
  }
  return true;
}

void DraDevices::UpsertSlice(ResourceSliceRecord slice) {
  std::string name = slice.name;
  slices_[std::move(name)] = std::move(slice);
}

void DraDevices::DeleteSlice(std::string_view name) {
  if (auto it = slices_.find(name); it != slices_.end()) slices_.erase(it);
}

void DraDevices::ReplaceSlices(std::vector<ResourceSliceRecord> slices) {
  slices_.clear();
  for (ResourceSliceRecord& s : slices) UpsertSlice(std::move(s));
}

void DraDevices::UpsertClaim(ResourceClaimRecord claim) {
  std::string key = claim.key;
  claims_[std::move(key)] = std::move(claim);
}

void DraDevices::DeleteClaim(std::string_view key) {
  if (auto it = claims_.find(key); it != claims_.end()) claims_.erase(it);
}

void DraDevices::ReplaceClaims(std::vector<ResourceClaimRecord> claims) {
  claims_.clear();
  for (ResourceClaimRecord& c : claims) UpsertClaim(std::move(c));
}

void DraDevices::UpsertClass(DeviceClassRecord device_class) {
  std::string name = device_class.name;
  classes_[std::move(name)] = std::move(device_class);
}

void DraDevices::DeleteClass(std::string_view name) {
  if (auto it = classes_.find(name); it != classes_.end()) classes_.erase(it);
}

void DraDevices::ReplaceClasses(std::vector<DeviceClassRecord> classes) {
  classes_.clear();
  for (DeviceClassRecord& c : classes) UpsertClass(std::move(c));
}

void DraDevices::UpsertTemplate(ClaimTemplateRecord claim_template) {
  std::string key = claim_template.key;
  templates_[std::move(key)] = std::move(claim_template);
}

void DraDevices::DeleteTemplate(std::string_view key) {
  if (auto it = templates_.find(key); it != templates_.end()) templates_.erase(it);
}

void DraDevices::ReplaceTemplates(std::vector<ClaimTemplateRecord> templates) {
  templates_.clear();
  for (ClaimTemplateRecord& t : templates) UpsertTemplate(std::move(t));
}

std::map<std::string, DraNodeCounts, std::less<>> DraDevices::CountByNode() const {
  std::map<PoolKey, Pool> pools = NewestPools(slices_);
  std::map<DeviceRef, std::pair<const ResourceClaimRecord*, size_t>> held;  // claim, result
  for (const auto& [key, claim] : claims_) {
    for (size_t i = 0; i < claim.allocated.size(); ++i) held[claim.allocated[i]] = {&claim, i};
  }

  std::map<std::string, DraNodeCounts, std::less<>> out;
  std::map<std::pair<std::string, std::string>, int64_t> under_root;  // (node, pcieRoot) -> GPUs
  std::set<std::pair<std::string, std::string>> gpus;  // (node, a whole GPU's or a parent's id)
  for (auto& [key, pool] : pools) {
    const std::string& driver = key.first;
    // What the held devices leave of the counters; the others, by node and resource.
    std::map<std::pair<std::string, std::string>, std::vector<const DraDevice*>> idle;
    for (const DraDevice* d : pool.devices) {
      std::string resource = DeviceResource(driver, *d);
      if (resource.empty() || d->node.empty()) continue;
      DraNodeCounts& node = out[d->node];
      std::string pool_name = driver + "/" + key.second;
      if (std::find(node.pools.begin(), node.pools.end(), pool_name) == node.pools.end()) {
        node.pools.push_back(std::move(pool_name));
      }
      if (node.product.empty() && !d->product.empty()) node.product = ProductLabelOf(d->product);
      if (node.memory_mib == 0 && d->type == "gpu") node.memory_mib = d->memory_mib;
      std::string gpu = d->type == "gpu" ? (d->uuid.empty() ? d->name : d->uuid) : d->parent_uuid;
      if (!gpu.empty() && gpus.emplace(d->node, std::move(gpu)).second) ++node.gpus;
      if (d->type == "gpu" && !d->pcie_root.empty()) {
        int64_t n = ++under_root[{d->node, d->pcie_root}];
        node.gpus_per_pcie_root = std::max(node.gpus_per_pcie_root, n);
      }
      auto by = held.find(DeviceRef{driver, key.second, d->name});
      if (by != held.end()) {
        ++node.allocatable[resource];
        if (!CountedByItsPod(*by->second.first, by->second.second, resource)) {
          ++node.used[resource];
        }
        TakeHeld(*d, pool.counters);
        continue;
      }
      idle[{d->node, std::move(resource)}].push_back(d);
    }
    for (const auto& [at, devices] : idle) {
      CounterAmounts left = pool.counters;  // each resource as if it alone were carved
      int64_t free = 0;
      for (const DraDevice* d : devices) {
        if (Consume(*d, left)) ++free;
      }
      if (free > 0) out[at.first].allocatable[at.second] += free;
    }
  }
  for (auto& [name, counts] : out) std::sort(counts.pools.begin(), counts.pools.end());
  return out;
}

bool DraDevices::CountedByItsPod(const ResourceClaimRecord& claim, size_t i,
                                 std::string_view resource) const {
  if (i >= claim.extended_resource_classes.size()) return false;
  auto device_class = classes_.find(claim.extended_resource_classes[i]);
  return device_class != classes_.end() && device_class->second.extended_resource == resource;
}

std::vector<ClaimedDevice> DraDevices::UsedByClaims() const {
  std::map<DeviceRef, std::pair<std::string, std::string>> where;  // -> (node, resource)
  for (const auto& [key, pool] : NewestPools(slices_)) {
    for (const DraDevice* d : pool.devices) {
      std::string resource = DeviceResource(key.first, *d);
      if (resource.empty() || d->node.empty()) continue;
      where[DeviceRef{key.first, key.second, d->name}] = {d->node, std::move(resource)};
    }
  }
  std::vector<ClaimedDevice> out;
  for (const auto& [key, claim] : claims_) {
    for (size_t i = 0; i < claim.allocated.size(); ++i) {
      auto at = where.find(claim.allocated[i]);
      if (at == where.end() || CountedByItsPod(claim, i, at->second.second)) continue;
      out.push_back({key, claim.owner_pod, at->second.first, at->second.second});
    }
  }
  return out;
}

std::map<std::string, NodeDevices, std::less<>> DraDevices::DevicesByNode() const {
  std::set<DeviceRef> held;
  for (const auto& [key, claim] : claims_) {
    held.insert(claim.allocated.begin(), claim.allocated.end());
  }
  std::map<std::string, NodeDevices, std::less<>> out;
  for (auto& [key, pool] : NewestPools(slices_)) {
    std::map<std::string, PoolDevices, std::less<>> by_node;  // a pool is one node's, as a rule
    for (const DraDevice* d : pool.devices) {
      if (d->node.empty()) continue;
      PoolDevices& at = by_node[d->node];
      if (held.contains(DeviceRef{key.first, key.second, d->name})) {
        TakeHeld(*d, pool.counters);
      } else {
        at.idle.push_back(*d);
      }
    }
    for (auto& [node, devices] : by_node) {
      devices.driver = key.first;
      devices.pool = key.second;
      devices.left = pool.counters;
      out[node].push_back(std::move(devices));
    }
  }
  // Pinned claims, in key order: the allocator's first fit on their GPU is taken.
  auto take_first_fit = [&](const SelectorFacts& facts) {
    for (auto& [node, pools] : out) {
      for (PoolDevices& pool : pools) {
        for (auto d = pool.idle.begin(); d != pool.idle.end(); ++d) {
          if (!Selects(facts, pool.driver, *d) || !Consume(*d, pool.left)) continue;
          pool.idle.erase(d);
          return;
        }
      }
    }
  };
  for (const auto& [key, claim] : claims_) {
    for (const DeviceAlternative& ask : claim.pinned) take_first_fit(WithClassOf(ask, classes_));
  }
  return out;
}

}  // namespace gpuadmit
