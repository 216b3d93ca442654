#include "core/report/consolidation.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/kube/gpu_equivalents.h"

namespace gpuadmit {
namespace {

// A time-sliced or MPS node whose device plugin advertises the replicas as nvidia.com/gpu
// (renameByDefault off) rather than nvidia.com/gpu.shared.
bool ReplicasUnderGpuName(const NodeFacts& node) {
  const std::string& strategy = node.gpu.sharing_strategy;
  return ReplicasPerGpu(node) > 1 && (strategy == "time-slicing" || strategy == "mps") &&
         !node.allocatable.contains("nvidia.com/gpu.shared");
}

// `list` on `node` in GPU equivalents.
double EquivalentsOn(const NodeFacts& node, const ResourceList& list) {
  int64_t replicas = ReplicasPerGpu(node);
  bool replicas_as_gpu = ReplicasUnderGpuName(node);
  double sum = 0;
  for (const auto& [resource, count] : list) {
    if (replicas_as_gpu && resource == "nvidia.com/gpu") {
      sum += static_cast<double>(count) / static_cast<double>(replicas);
    } else {
      sum += GpuEquivalents(resource, count, replicas);
    }
  }
  return sum;
}

bool BlocksScheduling(const Taint& t) {
  return t.effect == "NoSchedule" || t.effect == "NoExecute";
}

// Where a pod may run: anywhere its constraints allow; with unknown constraints, only on nodes
// like its own. Its own node always (it runs there; a taint added since does not evict it).
bool MayRunOn(const ReportPod& pod, const NodeFacts& own, const NodeFacts& target) {
  if (&own == &target) return true;
  if (pod.constraints) return CanRunOn(*pod.constraints, target);
  if (!target.ready || target.unschedulable || target.product != own.product) return false;
  return std::all_of(target.taints.begin(), target.taints.end(), [&](const Taint& t) {
    return !BlocksScheduling(t) ||
           std::any_of(own.taints.begin(), own.taints.end(), [&](const Taint& o) {
             return o.key == t.key && o.value == t.value && o.effect == t.effect;
           });
  });
}

struct Bin {
  const NodeFacts* facts = nullptr;
  double capacity = 0;   // GPU equivalents
  double allocated = 0;  // by every non-terminal pod bound here now
  ResourceList free;     // managed resources left, after the pods that stay
  ComputeRequest free_compute;
  size_t packed = 0;  // packed pods placed here
};

bool Fits(const ReportPod& pod, const Bin& bin) {
  for (const auto& [resource, count] : pod.need) {
    if (Get(bin.free, resource) < count) return false;
  }
  return FitsIn(pod.compute, bin.free_compute, bin.facts->compute);
}

void Take(const ReportPod& pod, Bin& bin) {
  for (const auto& [resource, count] : pod.need) bin.free[resource] -= count;
  bin.free_compute.cpu_milli -= pod.compute.cpu_milli;
  bin.free_compute.memory_bytes -= pod.compute.memory_bytes;
}

struct Packed {
  const ReportPod* pod = nullptr;
  size_t own = 0;  // its bin now
  double gpus = 0;
};

}  // namespace

std::optional<double> MeasuredUtilizationPercent(const NodeGpuMetrics& node) {
  for (bool mig : {false, true}) {
    double sum = 0;
    size_t n = 0;
    for (const GpuMetrics& gpu : node.gpus) {
      if (gpu.latest.IsMigInstance() != mig) continue;
      if (!gpu.utilization_percent || gpu.utilization_percent->count == 0) continue;
      sum += gpu.utilization_percent->mean;
      ++n;
    }
    if (n > 0) return sum / static_cast<double>(n);
  }
  return std::nullopt;
}

double NodeGpuCapacity(const NodeFacts& node) { return EquivalentsOn(node, node.allocatable); }

Consolidation Consolidate(std::span<const NodeFacts> nodes, std::span<const ReportPod> pods,
                          const ClusterGpuMetrics* metrics, const ConsolidationOptions& options) {
  Consolidation c;
  c.rule = options;
  std::vector<Bin> initial;
  for (const NodeFacts& node : nodes) {
    double capacity = NodeGpuCapacity(node);
    if (capacity <= 0 || !node.ready || node.unschedulable) continue;
    initial.push_back({&node, capacity, 0, node.allocatable, node.compute, 0});
  }
  std::sort(initial.begin(), initial.end(),
            [](const Bin& a, const Bin& b) { return a.facts->name < b.facts->name; });
  std::map<std::string_view, size_t, std::less<>> bin_of;
  for (size_t i = 0; i < initial.size(); ++i) bin_of.emplace(initial[i].facts->name, i);

  std::vector<Packed> packed;
  for (const ReportPod& pod : pods) {
    auto at = bin_of.find(pod.node);
    if (pod.terminal || at == bin_of.end()) continue;
    Bin& bin = initial[at->second];
    double gpus = EquivalentsOn(*bin.facts, pod.need);
    bin.allocated += gpus;
    if (pod.need.empty() || pod.daemon_set) {
      Take(pod, bin);
      if (pod.daemon_set && !pod.need.empty()) ++c.pods_pinned;
      continue;
    }
    packed.push_back({&pod, at->second, gpus});
  }
  std::sort(packed.begin(), packed.end(), [](const Packed& a, const Packed& b) {
    if (a.gpus != b.gpus) return a.gpus > b.gpus;
    return a.pod->key < b.pod->key;
  });
  c.pods_packed = packed.size();

  c.gpu_nodes = initial.size();
  for (const Bin& bin : initial) {
    c.capacity_gpus += bin.capacity;
    c.allocated_gpus += bin.allocated;
    UnderusedNode u{.node = bin.facts->name,
                    .capacity_gpus = bin.capacity,
                    .allocated_gpus = bin.allocated,
                    .allocated_percent = bin.allocated / bin.capacity * 100};
    if (metrics != nullptr) {
      if (const NodeGpuMetrics* m = metrics->FindNode(bin.facts->name)) {
        u.utilization_percent = MeasuredUtilizationPercent(*m);
      }
    }
    u.by_allocation = u.allocated_percent < options.underused_allocation_percent;
    u.by_utilization =
        u.utilization_percent && *u.utilization_percent < options.underused_utilization_percent;
    if (u.by_allocation || u.by_utilization) c.underused.push_back(std::move(u));
  }

  // Fullest first, then most GPUs, then name: pods pile up where most already are.
  std::vector<size_t> order(initial.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (initial[a].allocated != initial[b].allocated) {
      return initial[a].allocated > initial[b].allocated;
    }
    return initial[a].capacity > initial[b].capacity;
  });
  auto first_fit = [&](const Packed& p, std::vector<Bin>& bins,
                       const std::vector<char>* only) -> std::optional<size_t> {
    for (size_t b : order) {
      if (only != nullptr && !(*only)[b]) continue;
      if (MayRunOn(*p.pod, *bins[p.own].facts, *bins[b].facts) && Fits(*p.pod, bins[b])) return b;
    }
    return std::nullopt;
  };

  // Pass 1: every packed pod, first fit decreasing.
  std::vector<Bin> bins = initial;
  std::vector<size_t> where(packed.size());
  std::vector<std::string> unplaceable;
  for (size_t i = 0; i < packed.size(); ++i) {
    std::optional<size_t> b = first_fit(packed[i], bins, nullptr);
    if (!b) unplaceable.push_back(packed[i].pod->key);
    where[i] = b.value_or(packed[i].own);
    Take(*packed[i].pod, bins[where[i]]);
    ++bins[where[i]].packed;
  }
  std::vector<char> kept(bins.size(), 0);
  std::vector<char> in_use(bins.size(), 0);
  for (size_t b = 0; b < bins.size(); ++b) kept[b] = bins[b].packed > 0;
  for (const Packed& p : packed) in_use[p.own] = 1;
  c.nodes_in_use = static_cast<size_t>(std::count(in_use.begin(), in_use.end(), 1));
  size_t after = static_cast<size_t>(std::count(kept.begin(), kept.end(), 1));
  if (after >= c.nodes_in_use) {
    c.nodes_in_use_after = c.nodes_in_use;  // no node to free: nothing proposed
    return c;
  }

  // Pass 2: the pods of kept nodes stay; those of emptied nodes go to kept ones.
  std::vector<Bin> again = initial;
  std::vector<size_t> where_again(packed.size());
  bool all_placed = true;
  for (size_t i = 0; i < packed.size(); ++i) {
    if (!kept[packed[i].own]) continue;
    where_again[i] = packed[i].own;
    Take(*packed[i].pod, again[packed[i].own]);
  }
  for (size_t i = 0; i < packed.size() && all_placed; ++i) {
    if (kept[packed[i].own]) continue;
    std::optional<size_t> b = first_fit(packed[i], again, &kept);
    all_placed = b.has_value();
    if (b) {
      where_again[i] = *b;
      Take(*packed[i].pod, again[*b]);
    }
  }
  if (all_placed) where = std::move(where_again);

  std::vector<char> used_after(bins.size(), 0);
  for (size_t i = 0; i < packed.size(); ++i) {
    used_after[where[i]] = 1;
    if (where[i] != packed[i].own) {
      c.moves.push_back({packed[i].pod->key, initial[packed[i].own].facts->name,
                         initial[where[i]].facts->name, packed[i].gpus});
    }
  }
  c.nodes_in_use_after = static_cast<size_t>(std::count(used_after.begin(), used_after.end(), 1));
  for (size_t b = 0; b < initial.size(); ++b) {
    if (in_use[b] && !used_after[b]) {
      c.freed_nodes.push_back(initial[b].facts->name);
      c.potential_savings_gpus += initial[b].capacity;
    }
  }
  std::sort(c.moves.begin(), c.moves.end(),
            [](const PodMove& a, const PodMove& b) { return a.pod < b.pod; });
  std::sort(unplaceable.begin(), unplaceable.end());
  c.unplaceable = std::move(unplaceable);
  return c;
}

}  // namespace gpuadmit
