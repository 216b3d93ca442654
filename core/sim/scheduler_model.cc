#include "core/sim/scheduler_model.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/json/json_fields.h"
#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// A container's cpu (milli) or memory (bytes) request, its limit when it states no request (as
// the apiserver defaults it), and whether it stated either.
struct Stated {
  int64_t value = 0;
  bool stated = false;
};

Stated ContainerRequest(const json& container, bool cpu) {
  for (const char* part : {"requests", "limits"}) {
    const json& q = At(container, {"resources", part, cpu ? "cpu" : "memory"});
    if (!q.is_string() && !q.is_number()) continue;
    auto milli = ParseQuantityMilli(q.is_string() ? q.get<std::string>() : q.dump());
    if (!milli.ok()) continue;
    return {cpu ? milli.value() : milli.value() / 1000, true};
  }
  return {};
}

// Upstream's DefaultNormalizeScore (pkg/scheduler/framework/plugins/helper/normalize_score.go):
// scaled so the largest becomes kMaxNodeScore, reversed for plugins where less is better.
void Normalize(std::vector<int64_t>& scores, bool reverse) {
  int64_t max = 0;
  for (int64_t s : scores) max = std::max(max, s);
  for (int64_t& s : scores) {
    if (max == 0) {
      s = reverse ? kMaxNodeScore : 0;
      continue;
    }
    s = kMaxNodeScore * s / max;
    if (reverse) s = kMaxNodeScore - s;
  }
}

int64_t LeastRequested(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return (capacity - requested) * kMaxNodeScore / capacity;
}

int64_t LeastAllocated(const SimPod& pod, const SimNode& node) {
  int64_t cpu =
      LeastRequested(node.nonzero_cpu_milli + pod.nonzero_cpu_milli, node.allocatable.cpu_milli);
  int64_t memory =
      LeastRequested(node.nonzero_memory + pod.nonzero_memory, node.allocatable.memory);
  return (cpu + memory) / 2;  // cpu and memory, weight 1 each
}

int64_t BalancedAllocation(const SimPod& pod, const SimNode& node) {
  double fractions[2];
  int n = 0;
  auto add = [&](int64_t requested, int64_t asked, int64_t allocatable) {
    if (allocatable == 0) return;
    fractions[n++] = std::min(static_cast<double>(requested + asked) / allocatable, 1.0);
  };
  add(node.requested.cpu_milli, pod.requests.cpu_milli, node.allocatable.cpu_milli);
  add(node.requested.memory, pod.requests.memory, node.allocatable.memory);
  double std = n == 2 ? std::abs(fractions[0] - fractions[1]) / 2 : 0;
  return static_cast<int64_t>((1 - std) * kMaxNodeScore);
}

// The first resource `pod` asks for more of than `node` has left, "" when none.
std::string_view Insufficient(const SimPod& pod, const SimNode& node) {
  if (node.allocatable.pods > 0 && node.requested.pods + 1 > node.allocatable.pods) return "pods";
  const SimResources& asked = pod.requests;
  if (asked.cpu_milli > 0 &&
      node.requested.cpu_milli + asked.cpu_milli > node.allocatable.cpu_milli) {
    return "cpu";
  }
  if (asked.memory > 0 && node.requested.memory + asked.memory > node.allocatable.memory) {
    return "memory";
  }
  for (const auto& [resource, count] : asked.extended) {
    if (count > 0 &&
        Get(node.requested.extended, resource) + count > Get(node.allocatable.extended, resource)) {
      return resource;
    }
  }
  return "";
}

int64_t PreferredAffinity(const SimPod& pod, const SimNode& node) {
  int64_t sum = 0;
  for (const WeightedTerm& t : pod.preferred) {
    if (TermMatches(t.term, *node.facts)) sum += t.weight;
  }
  return sum;
}

int64_t IntolerablePreferNoSchedule(const SimPod& pod, const SimNode& node) {
  int64_t count = 0;
  for (const Taint& taint : node.facts->taints) {
    if (taint.effect != "PreferNoSchedule") continue;
    bool tolerated = std::any_of(pod.constraints.tolerations.begin(),
                                 pod.constraints.tolerations.end(), [&](const Toleration& t) {
                                   return (t.effect.empty() || t.effect == "PreferNoSchedule") &&
                                          t.Tolerates(taint);
                                 });
    count += tolerated ? 0 : 1;
  }
  return count;
}

}  // namespace

SimNode SimNodeOf(const json& node) {
  SimNode n;
  auto facts = std::make_shared<NodeFacts>(ReadNode(node));
  n.allocatable.extended = facts->allocatable;
  n.allocatable.cpu_milli = facts->compute.cpu_milli;
  n.allocatable.memory = facts->compute.memory_bytes;
  if (const json& pods = At(node, {"status", "allocatable", "pods"}); pods.is_string()) {
    if (auto count = ParseWholeQuantity(pods.get<std::string>()); count.ok()) {
      n.allocatable.pods = count.value();
    }
  }
  n.facts = std::move(facts);
  return n;
}

SimPod SimPodFromSpec(const json& pod_spec) {
  SimPod pod;
  pod.node_name = StringAt(pod_spec, {"nodeName"});
  pod.constraints = ReadSchedulingConstraints(pod_spec);
  pod.preferred = ReadPreferredTerms(pod_spec);
  PodRequirements requirements = ReadPodRequirements(pod_spec);
  pod.requests.extended = std::move(requirements.effective);
  pod.requests.cpu_milli = requirements.compute.cpu_milli;
  pod.requests.memory = requirements.compute.memory_bytes;
  for (bool cpu : {true, false}) {
    int64_t nonzero = 0;
    if (const json& containers = At(pod_spec, {"containers"}); containers.is_array()) {
      for (const json& c : containers) {
        Stated s = ContainerRequest(c, cpu);
        nonzero += s.stated ? s.value : (cpu ? kDefaultMilliCpuRequest : kDefaultMemoryRequest);
      }
    }
    int64_t init_max = 0;
    if (const json& init = At(pod_spec, {"initContainers"}); init.is_array()) {
      for (const json& c : init) init_max = std::max(init_max, ContainerRequest(c, cpu).value);
    }
    (cpu ? pod.nonzero_cpu_milli : pod.nonzero_memory) = std::max(nonzero, init_max);
  }
  return pod;
}

std::string FilterReason(const SimPod& pod, const SimNode& node) {
  const NodeFacts& facts = *node.facts;
  if (!pod.node_name.empty() && pod.node_name != facts.name) return "bound to another node";
  if (std::string why = WhyCannotRunOn(pod.constraints, facts); !why.empty()) return why;
  std::string_view lacking = Insufficient(pod, node);
  return lacking.empty() ? "" : "insufficient " + std::string(lacking);
}

bool Passes(const SimPod& pod, const SimNode& node) {
  const NodeFacts& facts = *node.facts;
  if (!pod.node_name.empty() && pod.node_name != facts.name) return false;
  return Insufficient(pod, node).empty() && CanRunOn(pod.constraints, facts);
}

size_t NodesToFind(size_t all, int percentage) {
  constexpr size_t kMinFeasibleNodesToFind = 100;
  constexpr int kMinFeasibleNodesPercentageToFind = 5;
  if (all < kMinFeasibleNodesToFind) return all;
  if (percentage <= 0) {
    percentage = std::max(50 - static_cast<int>(all / 125), kMinFeasibleNodesPercentageToFind);
  }
  if (percentage >= 100) return all;
  return std::max(all * static_cast<size_t>(percentage) / 100, kMinFeasibleNodesToFind);
}

namespace {

// Each feasible node's weighted total, in the order of `feasible`.
std::vector<int64_t> ScoreFeasible(const SimPod& pod, std::span<const SimNode> nodes,
                                   const std::vector<size_t>& feasible) {
  std::vector<int64_t> taint(feasible.size()), affinity(feasible.size());
  for (size_t k = 0; k < feasible.size(); ++k) {
    taint[k] = IntolerablePreferNoSchedule(pod, nodes[feasible[k]]);
    affinity[k] = PreferredAffinity(pod, nodes[feasible[k]]);
  }
  Normalize(taint, /*reverse=*/true);
  Normalize(affinity, /*reverse=*/false);
  // BalancedAllocation skips a pod that requests neither cpu nor memory
  // (kubernetes/kubernetes#129138).
  bool best_effort = pod.requests.cpu_milli == 0 && pod.requests.memory == 0;
  std::vector<int64_t> totals(feasible.size());
  for (size_t k = 0; k < feasible.size(); ++k) {
    const SimNode& node = nodes[feasible[k]];
    totals[k] = 3 * taint[k] + 2 * affinity[k] + LeastAllocated(pod, node) +
                (best_effort ? 0 : BalancedAllocation(pod, node));
  }
  return totals;
}

}  // namespace

std::vector<int64_t> ScoreNodes(const SimPod& pod, std::span<const SimNode> nodes) {
  std::vector<size_t> feasible;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (Passes(pod, nodes[i])) feasible.push_back(i);
  }
  std::vector<int64_t> scores = ScoreFeasible(pod, nodes, feasible);
  std::vector<int64_t> totals(nodes.size(), -1);
  for (size_t k = 0; k < feasible.size(); ++k) totals[feasible[k]] = scores[k];
  return totals;
}

void NodeSet::Set(size_t i, bool member) {
  uint64_t bit = uint64_t{1} << (i % 64);
  uint64_t& word = words_[i / 64];
  if (((word & bit) != 0) == member) return;
  word ^= bit;
  size_ += member ? 1 : -1;
}

size_t NodeSet::NextFrom(size_t from) const {
  size_t w = from / 64;
  if (w >= words_.size()) return npos;
  uint64_t word = words_[w] & (~uint64_t{0} << (from % 64));
  while (word == 0) {
    if (++w == words_.size()) return npos;
    word = words_[w];
  }
  return w * 64 + static_cast<size_t>(std::countr_zero(word));
}

std::optional<size_t> Schedule(const SimPod& pod, std::span<const SimNode> nodes,
                               SchedulerSearch* search, const NodeSet* among) {
  std::vector<size_t> feasible;
  const size_t all = nodes.size();
  const size_t start = search != nullptr && all > 0 ? search->next_start % all : 0;
  const size_t wanted =
      search != nullptr ? NodesToFind(all, search->percentage_of_nodes_to_score) : all;
  size_t processed = 0;
  if (among == nullptr) {
    while (processed < all && feasible.size() < wanted) {
      size_t i = (start + processed++) % all;
      if (Passes(pod, nodes[i])) feasible.push_back(i);
    }
  } else {
    // The members from `start` on, wrapping: the order the whole walk would meet them in. The
    // walk stops after the node that completes `wanted`, or goes round the whole cluster.
    processed = all;
    auto walk = [&](size_t from, size_t to) {
      for (size_t i = among->NextFrom(from); i < to; i = among->NextFrom(i + 1)) {
        if (!Passes(pod, nodes[i])) continue;
        feasible.push_back(i);
        if (feasible.size() == wanted) {
          processed = (i + all - start) % all + 1;
          return true;
        }
      }
      return false;
    };
    if (!walk(start, all)) walk(0, start);
  }
  if (search != nullptr && all > 0) search->next_start = (start + processed) % all;
  if (feasible.empty()) return std::nullopt;
  std::vector<int64_t> scores = ScoreFeasible(pod, nodes, feasible);
  // The best total; among equals the first in name order, where kube-scheduler draws one.
  size_t best = 0;
  for (size_t k = 1; k < feasible.size(); ++k) {
    if (scores[k] > scores[best] || (scores[k] == scores[best] && feasible[k] < feasible[best])) {
      best = k;
    }
  }
  return feasible[best];
}

void Bind(const SimPod& pod, SimNode& node) {
  node.requested.cpu_milli += pod.requests.cpu_milli;
  node.requested.memory += pod.requests.memory;
  for (const auto& [resource, count] : pod.requests.extended) {
    node.requested.extended[resource] += count;
  }
  node.requested.pods += 1;
  node.nonzero_cpu_milli += pod.nonzero_cpu_milli;
  node.nonzero_memory += pod.nonzero_memory;
}

void Unbind(const SimPod& pod, SimNode& node) {
  node.requested.cpu_milli -= pod.requests.cpu_milli;
  node.requested.memory -= pod.requests.memory;
  for (const auto& [resource, count] : pod.requests.extended) {
    node.requested.extended[resource] -= count;
  }
  node.requested.pods -= 1;
  node.nonzero_cpu_milli -= pod.nonzero_cpu_milli;
  node.nonzero_memory -= pod.nonzero_memory;
}

}  // namespace gpuadmit
