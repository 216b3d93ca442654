#include "core/sim/oracle.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <vector>

#include "core/json/json_fields.h"
#include "core/kube/kube_objects.h"
#include "core/kube/mig_resource.h"
#include "core/kube/scheduling.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// Dinic's maximum flow: blocking flows along BFS levels, O(V^2 E) at worst and far less on
// unit-capacity-like graphs such as this one.
class MaxFlow {
 public:
  explicit MaxFlow(size_t vertices) : edges_(vertices) {}

  void Add(size_t from, size_t to, int64_t capacity) {
    edges_[from].push_back({to, capacity, edges_[to].size()});
    edges_[to].push_back({from, 0, edges_[from].size() - 1});
  }

  int64_t Run(size_t source, size_t sink) {
    int64_t flow = 0;
    while (Levels(source, sink)) {
      next_.assign(edges_.size(), 0);
      while (int64_t pushed = Push(source, sink, std::numeric_limits<int64_t>::max())) {
        flow += pushed;
      }
    }
    return flow;
  }

 private:
  struct Edge {
    size_t to;
    int64_t capacity;
    size_t reverse;
  };

  bool Levels(size_t source, size_t sink) {
    level_.assign(edges_.size(), -1);
    std::queue<size_t> q;
    level_[source] = 0;
    q.push(source);
    while (!q.empty()) {
      size_t v = q.front();
      q.pop();
      for (const Edge& e : edges_[v]) {
        if (e.capacity > 0 && level_[e.to] < 0) {
          level_[e.to] = level_[v] + 1;
          q.push(e.to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  int64_t Push(size_t v, size_t sink, int64_t limit) {
    if (v == sink) return limit;
    for (size_t& i = next_[v]; i < edges_[v].size(); ++i) {
      Edge& e = edges_[v][i];
      if (e.capacity <= 0 || level_[e.to] != level_[v] + 1) continue;
      if (int64_t pushed = Push(e.to, sink, std::min(limit, e.capacity))) {
        e.capacity -= pushed;
        edges_[e.to][e.reverse].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<Edge>> edges_;
  std::vector<int> level_;
  std::vector<size_t> next_;
};

// The single MIG instance a pod asks for, or nullopt when it asks for something else.
std::optional<MigProfile> SingleMigAsk(const ResourceList& requests) {
  std::optional<MigProfile> found;
  for (const auto& [resource, count] : requests) {
    if (!IsManagedResource(resource) || count == 0) continue;
    auto profile = ParseMigResource(resource);
    if (!profile || count != 1 || found) return std::nullopt;
    found = profile;
  }
  return found;
}

}  // namespace

OracleResult MigOracle(const json& cluster, std::span<const Arrival> arrivals) {
  OracleResult out;
  const json& items = At(cluster, {"items"});
  if (!items.is_array()) return out;
  std::vector<NodeFacts> nodes;
  std::map<std::string, ResourceList> used;
  for (const json& item : items) {
    if (StringAt(item, {"kind"}) == "Node") nodes.push_back(ReadNode(item));
    if (StringAt(item, {"kind"}) != "Pod") continue;
    PodRecord pod = ReadPod(item, "");
    if (pod.terminal || pod.node.empty()) continue;
    for (const auto& [r, n] : pod.need) used[pod.node][r] += n;
  }
  // Pools: (node, MIG resource) with the instances left.
  struct Pool {
    size_t node;
    MigProfile profile;
    std::string resource;
    int64_t free;
  };
  std::vector<Pool> pools;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& [resource, count] : nodes[i].allocatable) {
      auto profile = ParseMigResource(resource);
      int64_t free = count - Get(used[nodes[i].name], resource);
      if (profile && free > 0) pools.push_back({i, *profile, resource, free});
    }
  }
  // Pod classes: the set of pools each pod may use, with how many pods share it.
  std::map<std::vector<size_t>, int64_t> classes;
  for (const Arrival& a : arrivals) {
    const json& spec = At(a.pod, {"spec"});
    PodRecord pod = ReadPod(a.pod, "");
    if (!HasManagedResource(pod.need)) continue;
    std::optional<MigProfile> ask = SingleMigAsk(pod.need);
    if (!ask) return out;  // not a MIG-only stream: applies stays false
    ++out.pods;
    SchedulingConstraints constraints = ReadSchedulingConstraints(spec);
    std::vector<size_t> options;
    for (size_t p = 0; p < pools.size(); ++p) {
      const Pool& pool = pools[p];
      bool allowed = pool.profile.name == ask->name || pool.profile.SmallerThan(*ask);
      if (allowed && CanRunOn(constraints, nodes[pool.node])) options.push_back(p);
    }
    ++classes[options];
  }
  out.applies = true;
  // Vertices: source 0, sink 1, then classes, then pools.
  const size_t first_class = 2;
  const size_t first_pool = first_class + classes.size();
  MaxFlow flow(first_pool + pools.size());
  size_t c = first_class;
  for (const auto& [options, count] : classes) {
    flow.Add(0, c, count);
    for (size_t p : options) flow.Add(c, first_pool + p, count);
    ++c;
  }
  for (size_t p = 0; p < pools.size(); ++p) flow.Add(first_pool + p, 1, pools[p].free);
  out.placeable = static_cast<int>(flow.Run(0, 1));
  return out;
}

}  // namespace gpuadmit
