#include "core/dra/dra_devices.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gpuadmit {
namespace {

using PoolKey = std::pair<std::string, std::string>;  // driver, pool

// Takes what `device` consumes from `left`; false (and `left` untouched) when some counter has
// too little, or names a counter set the pool does not publish.
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

// One pool's devices, newest generation only, and its counters.
struct Pool {
  std::vector<const DraDevice*> devices;
  CounterAmounts counters;
};

}  // namespace

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
  std::map<PoolKey, int64_t> newest;
  for (const auto& [name, s] : slices_) {
    auto [it, added] = newest.try_emplace({s.driver, s.pool}, s.generation);
    if (!added) it->second = std::max(it->second, s.generation);
  }
  std::map<PoolKey, Pool> pools;
  for (const auto& [name, s] : slices_) {  // in slice name order, so counting is repeatable
    PoolKey key{s.driver, s.pool};
    if (s.generation != newest[key]) continue;
    Pool& pool = pools[key];
    for (const DraDevice& d : s.devices) pool.devices.push_back(&d);
    for (const auto& [set, counters] : s.counters) pool.counters[set] = counters;
  }
  std::set<DeviceRef> held;
  std::set<DeviceRef> held_for_pods;
  for (const auto& [key, claim] : claims_) {
    for (const DeviceRef& ref : claim.allocated) {
      held.insert(ref);
      if (claim.for_extended_resource) held_for_pods.insert(ref);
    }
  }

  std::map<std::string, DraNodeCounts, std::less<>> out;
  std::map<std::pair<std::string, std::string>, int64_t> under_root;  // (node, pcieRoot) -> GPUs
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
      if (d->type == "gpu" && !d->pcie_root.empty()) {
        int64_t n = ++under_root[{d->node, d->pcie_root}];
        node.gpus_per_pcie_root = std::max(node.gpus_per_pcie_root, n);
      }
      DeviceRef ref{driver, key.second, d->name};
      if (held.contains(ref)) {
        ++node.allocatable[resource];
        if (!held_for_pods.contains(ref)) ++node.used[resource];
        for (const auto& [set, counters] : d->consumes) {
          for (const auto& [counter, amount] : counters) {
            int64_t& left = pool.counters[set][counter];  // both >= 0: no overflow
            left = left > amount ? left - amount : 0;
          }
        }
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

}  // namespace gpuadmit
