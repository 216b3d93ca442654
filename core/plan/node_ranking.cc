#include "core/plan/node_ranking.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "core/kube/mig_resource.h"
#include "core/plan/mps_clients.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

// Mean framebuffer used over the node's whole GPUs that report it (an instance's memory is
// part of its GPU's).
std::optional<double> MeanMemoryUsedPercent(const NodeGpuMetrics* m) {
  if (m == nullptr) return std::nullopt;
  double sum = 0;
  int n = 0;
  for (const GpuMetrics& g : m->gpus) {
    if (g.latest.IsMigInstance()) continue;
    if (auto used = g.latest.MemoryUsedPercent()) {
      sum += *used;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

class Ranker {
 public:
  Ranker(const PlanContext& context, const SchedulingConstraints& constraints,
         std::span<const NodeAsk> asks, const ComputeRequest& compute)
      : context_(context),
        policy_(context.policy.placement),
        constraints_(constraints),
        asks_(asks),
        compute_(compute),
        primary_(asks.front()),
        mig_profile_(MigProfileOf(primary_.resource)),
        any_metrics_(context.metrics != nullptr && !context.metrics->nodes().empty()),
        filter_(PlacementFilter(policy_)),
        weights_{policy_.score_memory_weight, policy_.score_idle_weight},
        // Whole GPUs and MIG instances are devices; a shared replica lives on one GPU.
        devices_asked_(primary_.resource == "nvidia.com/gpu" || !mig_profile_.empty()
                           ? primary_.count
                           : 1) {
    if (policy_.strategy != PlacementStrategy::kFragmentation) return;
    for (const WeightedShape& w : context.snapshot.mix()) {
      if (w.shape.resource != primary_.resource) continue;
      shapes_.push_back(&w);
      mix_pods_ += w.pods;
    }
    ComputePressure();
  }

  // For each GPU product, the share of its free devices that the mix's pods constrained to some
  // products would want: a shape's expected demand (its share of the mix's devices, times the
  // free devices of the whole cluster, which arriving pods will fill) spread over the products
  // it allows by their free devices. A device of a product in demand that a pod takes is one a
  // constrained pod will miss, so the fragmentation strategy counts it stranded, up to 1.
  void ComputePressure() {
    bool constrained = std::any_of(shapes_.begin(), shapes_.end(), [](const WeightedShape* w) {
      return !w->shape.products.empty();
    });
    if (!constrained) return;
    std::map<std::string_view, int64_t> free;
    int64_t total = 0;
    for (const NodeInventory* n : context_.snapshot.NodesOffering(primary_.resource)) {
      int64_t f = n->Free(primary_.resource);
      free[n->Product()] += f;
      total += f;
    }
    int64_t demand = 0;
    for (const WeightedShape* w : shapes_) demand += w->pods * w->shape.count;
    if (demand == 0 || total == 0) return;
    for (const WeightedShape* w : shapes_) {
      const std::vector<std::string>& products = w->shape.products;
      if (products.empty()) continue;
      int64_t allowed = 0;
      for (std::string_view p : products) allowed += free[p];
      if (allowed == 0) continue;
      double share = static_cast<double>(w->pods * w->shape.count) / static_cast<double>(demand);
      for (std::string_view p : products) {
        pressure_[p] += share * static_cast<double>(total) / static_cast<double>(allowed);
      }
    }
    for (auto& [product, pressure] : pressure_) pressure = std::min(1.0, pressure);
  }

  // Pressure() of the node's product; 0 when no constrained pod wants it.
  double Pressure(const NodeInventory& node) const {
    auto it = pressure_.find(node.Product());
    return it == pressure_.end() ? 0 : it->second;
  }

  NodeRanking Run(std::string_view earlier_hostname) {
    auto offering = context_.snapshot.NodesOffering(primary_.resource);
    result_.offering = offering.size();
    if (!earlier_hostname.empty() && KeepEarlier(earlier_hostname)) {
      ExplainStranding();
      return std::move(result_);
    }
    switch (policy_.strategy) {
      case PlacementStrategy::kFirstFit:
        FirstFit(offering);
        break;
      case PlacementStrategy::kBestFit:
        BestFit(offering);
        break;
      case PlacementStrategy::kFragmentation:
        LeastFreeFirst(offering);
        break;
      default:
        MostFreeFirst(offering);
        break;
    }
    ExplainStranding();
    return std::move(result_);
  }

 private:
  static std::string MigProfileOf(const std::string& resource) {
    auto p = ParseMigResource(resource);
    return p ? p->name : std::string();
  }

  // Free net of reservations, and of MPS clients past the policy's cap (sharing.mps).
  int64_t FreeNet(const NodeInventory& node, const std::string& resource) const {
    int64_t free = node.Free(resource) - MpsClientExcess(node, resource, context_.policy.sharing);
    if (context_.reservations != nullptr) {
      free -= context_.reservations->Reserved(node.name(), resource, context_.own_key);
    }
    return free;
  }

  // The node's cpu and memory left, net of what other admissions pinned there reserved: only a
  // required pin reserves them (SelectNode), so only then are they looked up.
  ComputeRequest ComputeLeft(const NodeInventory& node) const {
    ComputeRequest left = node.ComputeFree();
    if (context_.reservations == nullptr || policy_.affinity != AffinityMode::kRequired) {
      return left;
    }
    left.cpu_milli -= context_.reservations->Reserved(node.name(), kCpuResource, context_.own_key);
    left.memory_bytes -=
        context_.reservations->Reserved(node.name(), kMemoryResource, context_.own_key);
    return left;
  }

  RankedNode Weigh(const NodeInventory& node) const {
    RankedNode r;
    r.node = &node;
    r.allocatable = Get(node.facts->allocatable, primary_.resource);
    int64_t free = node.Free(primary_.resource);
    if (free < primary_.count) {
      if (context_.explain) r.why_not = "too few free (" + std::to_string(free) + ")";
      return r;
    }
    if (!CanRunOn(constraints_, *node.facts)) {
      if (context_.explain) r.why_not = WhyCannotRunOn(constraints_, *node.facts);
      return r;
    }
    r.free = FreeNet(node, primary_.resource);
    if (r.free < primary_.count) {
      if (context_.explain) {
        r.why_not = "too few free (" + std::to_string(r.free) + " after " +
                    std::to_string(free - r.free) + " reserved by other admissions)";
      }
      return r;
    }
    const ComputeRequest left = ComputeLeft(node);
    if (!FitsIn(compute_, left, node.facts->compute)) {
      if (context_.explain) {
        r.why_not = "too little cpu or memory free (" + std::to_string(left.cpu_milli) + "m cpu, " +
                    std::to_string(left.memory_bytes >> 20) + "Mi memory)";
      }
      return r;
    }
    auto others = asks_.subspan(1);
    auto lacking = std::find_if(others.begin(), others.end(), [&](const NodeAsk& other) {
      return FreeNet(node, other.resource) < other.count;
    });
    if (lacking != others.end()) {
      if (context_.explain) r.why_not = "too few " + lacking->resource + " free";
      return r;
    }
    const NodeGpuMetrics* m = any_metrics_ ? context_.metrics->FindNode(node.name()) : nullptr;
    if (filter_.Active() || policy_.strategy == PlacementStrategy::kScore) {
      DeviceAvailability a = BestDevices(m, r.allocatable, mig_profile_, filter_, weights_,
                                         devices_asked_);
      if (a.passing < devices_asked_) {
        if (context_.explain) {
          r.why_not = std::to_string(a.passing) + " of its " + DeviceWord() +
                      " pass the filter (" + Describe(filter_) + "), " +
                      std::to_string(devices_asked_) + " asked";
        }
        return r;
      }
      r.score = a.score;
    }
    r.fits = true;
    IdleThresholds thresholds{policy_.idle_max_utilization_percent,
                              policy_.idle_max_memory_percent};
    // Metrics count physical devices: a whole GPU or a MIG instance. Other resources (shared
    // GPU replicas) have no idle count of their own: their free ones count as idle.
    int64_t idle = r.free;
    if (primary_.resource == "nvidia.com/gpu" || !mig_profile_.empty()) {
      idle = IdleGpuCount(m, r.allocatable, thresholds, mig_profile_);
    }
    r.idle = std::min(idle, r.free);
    if (m != nullptr) {
      r.utilization_percent = m->MeanUtilizationPercent();
      r.memory_used_percent = MeanMemoryUsedPercent(m);
    }
    if (policy_.strategy == PlacementStrategy::kFragmentation) {
      ComputeRequest after{left.cpu_milli - compute_.cpu_milli,
                           left.memory_bytes - compute_.memory_bytes};
      r.score =
          Fragmentation(node, r.free, left) - Fragmentation(node, r.free - primary_.count, after);
      r.score -= static_cast<double>(primary_.count) * Pressure(node);
    }
    return r;
  }

  // "GPUs" or "2g.20gb instances": the devices the filter counts.
  std::string DeviceWord() const {
    return mig_profile_.empty() ? std::string("GPUs") : mig_profile_ + " instances";
  }

  // The free devices of the ranked resource that a pod drawn from the mix could not use on
  // `node` with `free` of them and `left` cpu and memory: free x the share of the mix's pods
  // that would not fit.
  double Fragmentation(const NodeInventory& node, int64_t free, const ComputeRequest& left) const {
    if (mix_pods_ == 0 || free <= 0) return 0;
    const std::vector<bool>& may_use = MayUse(node);
    int64_t stranded = 0;
    for (size_t i = 0; i < shapes_.size(); ++i) {
      if (StrandedFor(shapes_[i]->shape, may_use[i], node, free, left) != Stranding::kNone) {
        stranded += shapes_[i]->pods;
      }
    }
    return static_cast<double>(free) * static_cast<double>(stranded) /
           static_cast<double>(mix_pods_);
  }

  // Which shapes of shapes_ may use the GPU product of `node`, worked out once a product: a
  // node is weighed against every shape twice, and most clusters have a handful of products.
  const std::vector<bool>& MayUse(const NodeInventory& node) const {
    auto [it, added] = may_use_.try_emplace(node.Product());
    if (added) {
      it->second.reserve(shapes_.size());
      for (const WeightedShape* w : shapes_) {
        const std::vector<std::string>& products = w->shape.products;
        it->second.push_back(products.empty() || std::binary_search(products.begin(),
                                                                    products.end(),
                                                                    node.Product()));
      }
    }
    return it->second;
  }

  // Why a pod of `shape` (which may use the node's product or not) could not use `free`
  // devices and `left` cpu and memory of `node`.
  Stranding StrandedFor(const PodShape& shape, bool may_use, const NodeInventory& node,
                        int64_t free, const ComputeRequest& left) const {
    const ComputeRequest& allocatable = node.facts->compute;
    if (!may_use) return Stranding::kGpuType;
    if (shape.count > free) return Stranding::kDevices;
    if (allocatable.cpu_milli != 0 && shape.cpu_milli > left.cpu_milli) return Stranding::kCpu;
    if (allocatable.memory_bytes != 0 && shape.memory_bytes > left.memory_bytes) {
      return Stranding::kMemory;
    }
    return Stranding::kNone;
  }

  // For the fragmentation strategy, what the chosen node is left with, in words:
  // "leaves 3 nvidia.com/gpu free that 12% of the mix could not use (cpu 8%, too few 4%)".
  void ExplainStranding() {
    if (policy_.strategy != PlacementStrategy::kFragmentation || !result_.chosen) return;
    const NodeInventory& node = *result_.chosen->node;
    const int64_t free = result_.chosen->free - primary_.count;
    std::string& out = result_.stranding;
    if (free <= 0) {
      out = "leaves no " + primary_.resource + " free";
      return;
    }
    ComputeRequest left = ComputeLeft(node);
    left.cpu_milli -= compute_.cpu_milli;
    left.memory_bytes -= compute_.memory_bytes;
    int64_t by[5] = {};
    const std::vector<bool>& may_use = MayUse(node);
    for (size_t i = 0; i < shapes_.size(); ++i) {
      by[static_cast<int>(StrandedFor(shapes_[i]->shape, may_use[i], node, free, left))] +=
          shapes_[i]->pods;
    }
    auto percent = [&](int64_t pods) {
      return std::to_string(mix_pods_ == 0 ? 0 : (100 * pods + mix_pods_ / 2) / mix_pods_) + "%";
    };
    out = "leaves " + std::to_string(free) + " " + primary_.resource + " free that " +
          percent(mix_pods_ - by[0]) + " of the workload mix could not use";
    static constexpr std::string_view kWhy[] = {"", "GPU type", "too few", "cpu", "memory"};
    std::string parts;
    for (int i = 1; i < 5; ++i) {
      if (by[i] == 0) continue;
      parts += (parts.empty() ? "" : ", ") + std::string(kWhy[i]) + " " + percent(by[i]);
    }
    if (!parts.empty()) out += " (" + parts + ")";
    if (double pressure = Pressure(node); pressure > 0) {
      out += "; " + std::to_string(static_cast<int>(100 * pressure + 0.5)) + "% of its free " +
             std::string(node.Product()) + " wanted by pods that may use only some GPU types";
    }
  }

  // Whether `a` ranks above `b` (both fit).
  bool Better(const RankedNode& a, const RankedNode& b) const {
    switch (policy_.strategy) {
      case PlacementStrategy::kMostIdle: {
        bool a_enough = a.idle >= primary_.count;
        bool b_enough = b.idle >= primary_.count;
        if (a_enough != b_enough) return a_enough;
        if (a.idle != b.idle) return a.idle > b.idle;
        double au = a.utilization_percent.value_or(0);
        double bu = b.utilization_percent.value_or(0);
        if (au != bu) return au < bu;
        break;
      }
      case PlacementStrategy::kBestFit:
        if (a.free != b.free) return a.free < b.free;
        break;
      case PlacementStrategy::kWorstFit:
        if (a.free != b.free) return a.free > b.free;
        break;
      case PlacementStrategy::kScore:
        if (a.score != b.score) return a.score > b.score;
        break;
      case PlacementStrategy::kFragmentation:
        if (a.score != b.score) return a.score > b.score;
        if (a.free != b.free) return a.free < b.free;
        break;
      case PlacementStrategy::kFirstFit:
        break;
    }
    return a.node->name() < b.node->name();
  }

  void Offer(RankedNode r) {
    ++result_.examined;
    if (r.fits) {
      ++result_.weighed;
      if (!result_.chosen || Better(r, *result_.chosen)) result_.chosen = r;
    }
    if (context_.explain && result_.explained.size() < kMaxExplainedNodes) {
      result_.explained.push_back(std::move(r));
    }
  }

  bool KeepEarlier(std::string_view hostname) {
    const NodeInventory* node = context_.snapshot.FindNode(hostname);
    if (node == nullptr || HostnameOf(*node) != hostname) return false;
    RankedNode r = Weigh(*node);
    if (!r.fits) return false;
    Offer(std::move(r));
    result_.kept_earlier = true;
    return true;
  }

  // Whether a node with `free` (before reservations) of the ranked resource, coming after the
  // current choice in most-free-first order, could still rank above it.
  bool CouldBeat(int64_t free) const {
    if (!result_.chosen) return true;
    const RankedNode& best = *result_.chosen;
    switch (policy_.strategy) {
      case PlacementStrategy::kMostIdle:
        // Its idle count is at most `free`; at equal counts only utilisation (or the name,
        // which comes later) can decide, and without metrics there is none.
        return free > best.idle || (free == best.idle && any_metrics_);
      case PlacementStrategy::kWorstFit:
        return free > best.free;
      default:
        return true;
    }
  }

  void MostFreeFirst(std::span<const NodeInventory* const> nodes) {
    for (const NodeInventory* node : nodes) {
      int64_t free = node->Free(primary_.resource);
      if (free < primary_.count || !CouldBeat(free) || result_.weighed >= kMaxWeighed) break;
      Offer(Weigh(*node));
    }
  }

  // From the least free that still fits upwards, a run of equally free nodes at a time (in name
  // order), until a run has more free than the choice has left.
  void BestFit(std::span<const NodeInventory* const> nodes) {
    const std::string& r = primary_.resource;
    int64_t count = primary_.count;
    size_t end = static_cast<size_t>(
        std::partition_point(nodes.begin(), nodes.end(),
                             [&](const NodeInventory* n) { return n->Free(r) >= count; }) -
        nodes.begin());
    while (end > 0 && result_.weighed < kMaxWeighed) {
      int64_t run_free = nodes[end - 1]->Free(r);
      if (result_.chosen && run_free > result_.chosen->free) break;
      auto run_end = nodes.begin() + static_cast<std::ptrdiff_t>(end);
      size_t begin = static_cast<size_t>(
          std::partition_point(nodes.begin(), run_end,
                               [&](const NodeInventory* n) { return n->Free(r) > run_free; }) -
          nodes.begin());
      for (size_t i = begin; i < end && result_.weighed < kMaxWeighed; ++i) Offer(Weigh(*nodes[i]));
      end = begin;
    }
  }

  // From the least free that still fits upwards, every node until kMaxWeighed could take the
  // pod: fragmentation is no monotone function of the free count, so no run ends the walk.
  void LeastFreeFirst(std::span<const NodeInventory* const> nodes) {
    const std::string& r = primary_.resource;
    int64_t count = primary_.count;
    size_t end = static_cast<size_t>(
        std::partition_point(nodes.begin(), nodes.end(),
                             [&](const NodeInventory* n) { return n->Free(r) >= count; }) -
        nodes.begin());
    for (size_t i = end; i > 0 && result_.weighed < kMaxFragmentationWeighed; --i)
      Offer(Weigh(*nodes[i - 1]));
  }

  // The nodes offering the resource with enough free, in name order, until one takes the pod.
  // The index points into the snapshot's nodes, which are sorted by name, so a heap of pointers
  // gives name order without reading a name, and a congested cluster costs the few nodes with
  // room, not a walk of every node.
  void FirstFit(std::span<const NodeInventory* const> nodes) {
    const std::string& r = primary_.resource;
    int64_t count = primary_.count;
    auto end = std::partition_point(nodes.begin(), nodes.end(),
                                    [&](const NodeInventory* n) { return n->Free(r) >= count; });
    std::vector<const NodeInventory*> heap(nodes.begin(), end);
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    while (!heap.empty() && !result_.chosen) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      Offer(Weigh(*heap.back()));
      heap.pop_back();
    }
  }

  const PlanContext& context_;
  const PlacementPolicy& policy_;
  const SchedulingConstraints& constraints_;
  std::span<const NodeAsk> asks_;
  const ComputeRequest& compute_;
  const NodeAsk& primary_;
  std::string mig_profile_;  // of the ranked resource, "" when it is no MIG profile
  bool any_metrics_;
  DeviceFilter filter_;
  ScoreWeights weights_;
  int64_t devices_asked_;  // devices the filter and the score weigh per node
  std::vector<const WeightedShape*> shapes_;  // the mix's shapes of the ranked resource
  std::map<std::string_view, double> pressure_;  // product -> ComputePressure()
  mutable std::map<std::string_view, std::vector<bool>> may_use_;  // product -> MayUse()
  int64_t mix_pods_ = 0;                      // the pods they count
  NodeRanking result_;
};

}  // namespace

std::vector<NodeAsk> AsksOf(const ResourceList& effective) {
  auto rank = [](std::string_view resource) {
    if (resource == "nvidia.com/gpu") return 0;
    return resource.starts_with(kMigResourcePrefix) ? 1 : 2;
  };
  // A pod asks for one or two of these: a pass per rank keeps the list's order within each,
  // as a stable sort would, without one.
  std::vector<NodeAsk> asks;
  for (int r = 0; r < 3; ++r) {
    for (const auto& [resource, count] : effective) {
      if (count > 0 && IsManagedResource(resource) && rank(resource) == r) {
        asks.push_back({resource, count});
      }
    }
  }
  return asks;
}

const std::string& HostnameOf(const NodeInventory& node) {
  auto it = node.facts->labels.find(kHostnameLabel);
  return it != node.facts->labels.end() ? it->second : node.name();
}

DeviceFilter PlacementFilter(const PlacementPolicy& placement) {
  return {placement.filter_min_free_memory_mib, placement.filter_max_utilization_percent};
}

std::string_view StrategyName(PlacementStrategy strategy) {
  switch (strategy) {
    case PlacementStrategy::kMostIdle:
      return "most-idle";
    case PlacementStrategy::kBestFit:
      return "best-fit";
    case PlacementStrategy::kFirstFit:
      return "first-fit";
    case PlacementStrategy::kWorstFit:
      return "worst-fit";
    case PlacementStrategy::kScore:
      return "score";
    case PlacementStrategy::kFragmentation:
      return "fragmentation";
  }
  return "";
}

NodeRanking RankNodes(const PlanContext& context, const SchedulingConstraints& constraints,
                      std::span<const NodeAsk> asks, const ComputeRequest& compute,
                      std::string_view earlier_hostname) {
  if (asks.empty()) return {};
  return Ranker(context, constraints, asks, compute).Run(earlier_hostname);
}

}  // namespace gpuadmit
