#include "core/sim/replay.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <queue>
#include <tuple>

#include "core/admission/review.h"
#include "core/inventory/cluster_state.h"
#include "core/inventory/reservation_ledger.h"
#include "core/json/json_fields.h"
#include "core/kube/quantity.h"
#include "core/sim/scheduler_model.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kReservation[] = "gpuadmit.io/reservation";
// 30 s: serve's reservation TTL; a pod normally reaches the watch long before.
constexpr std::chrono::seconds kReservationTtl{30};

ReservationLedger::TimePoint SimTime(double seconds) {
  return ReservationLedger::TimePoint(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds)));
}

SimNode SimNodeOf(const json& node) {
  SimNode n;
  auto facts = std::make_shared<NodeFacts>(ReadNode(node));
  n.allocatable = facts->allocatable;
  n.facts = std::move(facts);
  for (const char* r : {kCpuMilli, kMemoryBytes, kPods}) {
    const json& q = At(node, {"status", "allocatable", r});
    if (!q.is_string()) continue;
    auto milli = ParseQuantityMilli(q.get<std::string>());
    if (milli.ok())
      n.allocatable[r] = std::string_view(r) == kCpuMilli ? milli.value() : milli.value() / 1000;
  }
  return n;
}

json ReviewOf(const json& pod, const std::string& uid) {
  const json& metadata = pod["metadata"];
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"name", metadata.value("name", "")},
            {"namespace", metadata.value("namespace", "default")},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "system:serviceaccount:kube-system:replicaset-controller"}}},
            {"object", pod},
            {"dryRun", false}}}};
}

// What gpuadmit's answer makes of `pod`, and whether it fell back; the pod unchanged when the
// answer has no patch.
std::pair<json, bool> Admit(const json& pod, const std::string& uid, const ReviewContext& context) {
  auto answer = Review(ReviewOf(pod, uid).dump(), context);
  if (!answer.ok()) return {pod, false};
  json body = json::parse(answer.value().body, nullptr, /*allow_exceptions=*/false);
  const json& encoded = At(body, {"response", "patch"});
  if (!encoded.is_string()) return {pod, false};
  auto text = Base64Decode(encoded.get<std::string>());
  if (!text.ok()) return {pod, false};
  json ops = json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  json patched;
  try {  // nlohmann's patch() throws on an operation that does not apply: the pod stays as it was
    patched = pod.patch(ops);
  } catch (const json::exception&) {
    return {pod, false};
  }
  bool fell_back =
      patched["metadata"]["annotations"].contains(context.policy.Annotation("fallback"));
  return {std::move(patched), fell_back};
}

enum class Step { kArrive, kVisible, kSchedule, kDepart };

struct Event {
  double at;
  uint64_t seq;  // ties in time keep the order events were made
  Step step;
  size_t pod;
  bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

struct PodState {
  json object;
  SimPod sim;
  std::string key;  // namespace/name
  std::optional<size_t> node;
};

}  // namespace

Result<ReplayResult> Replay(const json& cluster, std::span<const Arrival> arrivals,
                            const Policy* policy, const ReplayOptions& options) {
  const json& items = At(cluster, {"items"});
  if (!items.is_array()) return Error{"the cluster list has no \"items\" array"};
  ClusterState state(kReservation);
  std::vector<SimNode> nodes;
  for (const json& item : items) {
    if (StringAt(item, {"kind"}) == "Node") {
      state.UpsertNode(ReadNode(item));
      nodes.push_back(SimNodeOf(item));
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const SimNode& a, const SimNode& b) { return a.facts->name < b.facts->name; });
  // Sorted by name: a pod's node is a binary search, not a scan per pod.
  auto node_index = [&](const std::string& name) -> std::optional<size_t> {
    auto it =
        std::lower_bound(nodes.begin(), nodes.end(), name,
                         [](const SimNode& n, const std::string& v) { return n.facts->name < v; });
    if (it == nodes.end() || it->facts->name != name) return std::nullopt;
    return static_cast<size_t>(it - nodes.begin());
  };
  for (const json& item : items) {
    if (StringAt(item, {"kind"}) != "Pod") continue;
    PodRecord record = ReadPod(item, kReservation);
    if (record.terminal) continue;
    if (auto at = node_index(record.node)) Bind(SimPodFromSpec(item["spec"]), nodes[*at]);
    state.UpsertPod(std::move(record));
  }

  double now = 0;
  ReservationLedger::TimePoint now_point;  // `now` as the ledger's time
  ReservationLedger ledger(kReservationTtl);
  LedgerReservations reservations(ledger, &now_point);
  std::vector<PodState> pods(arrivals.size());
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (StringAt(arrivals[i].pod, {"metadata", "name"}).empty()) {
      return Error{"arrival " + std::to_string(i) + ": the pod has no metadata.name"};
    }
    events.push({arrivals[i].at, seq++, Step::kArrive, i});
  }

  ReplayResult result;
  std::deque<size_t> pending;  // offered to the scheduler, not bound, in arrival order
  uint64_t version = 0;
  auto try_pending = [&] {
    for (auto it = pending.begin(); it != pending.end();) {
      PodState& p = pods[*it];
      std::optional<size_t> at = Schedule(p.sim, nodes);
      if (!at) {
        ++it;
        continue;
      }
      Bind(p.sim, nodes[*at]);
      p.node = at;
      json bound = p.object;
      bound["spec"]["nodeName"] = nodes[*at].facts->name;
      bound["status"] = {{"phase", "Running"}};
      state.UpsertPod(ReadPod(bound, kReservation));
      result.waits.push_back(now - arrivals[*it].at);
      for (const auto& [resource, count] : p.sim.requests) {
        if (IsManagedResource(resource) && count > 0) ++result.placed_by_resource[resource];
      }
      if (arrivals[*it].duration) {
        events.push({now + *arrivals[*it].duration, seq++, Step::kDepart, *it});
      }
      it = pending.erase(it);
    }
  };

  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    now = e.at;
    now_point = SimTime(now);
    PodState& p = pods[e.pod];
    switch (e.step) {
      case Step::kArrive: {
        ++result.arrived;
        json object = arrivals[e.pod].pod;
        if (!object["metadata"].contains("namespace")) object["metadata"]["namespace"] = "default";
        if (policy != nullptr) {
          ledger.Expire(now_point);
          InventorySnapshot snapshot = state.Snapshot(++version);
          ReviewContext context{snapshot, *policy, nullptr, &reservations};
          auto [admitted, fell_back] = Admit(object, "sim-" + std::to_string(e.pod), context);
          object = std::move(admitted);
          result.fallbacks += fell_back ? 1 : 0;
        }
        p.object = std::move(object);
        p.sim = SimPodFromSpec(p.object["spec"]);
        p.key = ObjectKey(p.object);
        events.push({now + options.watch_delay, seq++, Step::kVisible, e.pod});
        events.push({now + options.bind_delay, seq++, Step::kSchedule, e.pod});
        break;
      }
      case Step::kVisible:
        if (!p.node) {  // still unbound: the watch shows it queued
          json queued = p.object;
          queued["status"] = {{"phase", "Pending"}};
          state.UpsertPod(ReadPod(queued, kReservation));
        }
        for (const std::string& key : state.TakeArrivedReservations()) ledger.Release(key);
        break;
      case Step::kSchedule:
        pending.push_back(e.pod);
        try_pending();
        break;
      case Step::kDepart:
        Unbind(p.sim, nodes[*p.node]);
        p.node.reset();
        state.DeletePod(p.key);
        try_pending();
        break;
    }
  }
  result.pending = static_cast<int>(pending.size());
  result.placed = result.arrived - result.pending;
  return result;
}

}  // namespace gpuadmit
