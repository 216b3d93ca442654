#include "webhook/queue/live_queue.h"

#include <cstdio>
#include <ctime>
#include <string>

#include "core/kube/scheduling.h"

namespace gpuadmit {
namespace {

// 2^62: room no pod's cpu or memory reaches, for a node that states none.
constexpr int64_t kUnlimited = int64_t{1} << 62;

}  // namespace

std::vector<NodeRoom> RoomsOf(const InventorySnapshot& snapshot) {
  std::vector<NodeRoom> rooms;
  rooms.reserve(snapshot.nodes().size());
  for (const NodeInventory& node : snapshot.nodes()) {
    const NodeFacts& facts = *node.facts;
    NodeRoom& room = rooms.emplace_back();
    room.name = facts.name;
    room.allocatable = facts.allocatable;
    room.allocatable["cpu"] = facts.compute.cpu_milli > 0 ? facts.compute.cpu_milli : kUnlimited;
    room.allocatable["memory"] =
        facts.compute.memory_bytes > 0 ? facts.compute.memory_bytes : kUnlimited;
    if (!facts.ready || facts.unschedulable) continue;  // free stays empty: no room
    for (const auto& [resource, count] : facts.allocatable)
      room.free[resource] = node.Free(resource);
    ComputeRequest free = node.ComputeFree();
    room.free["cpu"] = facts.compute.cpu_milli > 0 ? free.cpu_milli : kUnlimited;
    room.free["memory"] = facts.compute.memory_bytes > 0 ? free.memory_bytes : kUnlimited;
  }
  return rooms;
}

std::optional<QueuedPod> QueuedPodOf(const PodRecord& pod, std::string_view gate,
                                     std::span<const NodeInventory> nodes) {
  if (pod.queued == nullptr || !pod.node.empty()) return std::nullopt;
  const QueuedFacts& facts = *pod.queued;
  if (!facts.HeldBy(gate)) return std::nullopt;
  QueuedPod q;
  q.key = pod.key;
  q.priority = facts.priority;
  // A creationTimestamp that does not parse (never from an apiserver) queues last in its
  // priority, and its timeout never comes: the next leader's parse fails alike.
  q.arrived_at = ParseKubeTime(facts.created).value_or(1e18);
  q.ask = pod.need;
  if (pod.compute.cpu_milli > 0) q.ask["cpu"] = pod.compute.cpu_milli;
  if (pod.compute.memory_bytes > 0) q.ask["memory"] = pod.compute.memory_bytes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (CanRunOn(facts.constraints, *nodes[n].facts)) q.nodes.push_back(n);
  }
  if (q.nodes.empty()) q.nodes.push_back(nodes.size());
  return q;
}

std::optional<double> ParseKubeTime(std::string_view text) {
  std::tm tm{};
  int consumed = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  double fraction = 0;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    double scale = 0.1;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, scale /= 10) {
      fraction += (s[i] - '0') * scale;
    }
  }
  if (i + 1 != s.size() || (s[i] != 'Z' && s[i] != 'z')) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  return static_cast<double>(timegm(&tm)) + fraction;
}

}  // namespace gpuadmit
