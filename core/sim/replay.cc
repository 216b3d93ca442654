#include "core/sim/replay.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <queue>
#include <tuple>
#include <utility>

#include "core/admission/base64.h"
#include "core/admission/review.h"
#include "core/inventory/capacity_queue.h"
#include "core/inventory/cluster_state.h"
#include "core/inventory/reservation_ledger.h"
#include "core/json/json_fields.h"
#include "core/kube/gpu_equivalents.h"
#include "core/kube/quantity.h"
#include "core/sim/pending_pods.h"
#include "core/sim/queue_view.h"
#include "core/sim/scheduler_model.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// 30 s: serve's reservation TTL; a pod normally reaches the watch long before.
constexpr std::chrono::seconds kReservationTtl{30};

ReservationLedger::TimePoint SimTime(double seconds) {
  return ReservationLedger::TimePoint(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds)));
}

json ReviewOf(json pod, const std::string& uid) {
  std::string name = pod["metadata"].value("name", "");
  std::string ns = pod["metadata"].value("namespace", "default");
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"name", std::move(name)},
            {"namespace", std::move(ns)},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "system:serviceaccount:kube-system:replicaset-controller"}}},
            {"object", std::move(pod)},
            {"dryRun", false}}}};
}

// What gpuadmit's answer made of a pod.
struct Admitted {
  json pod;
  bool fell_back = false;
  bool shared = false;  // a sharing mode was applied
};

// What gpuadmit's answer makes of `pod`; the pod unchanged when the answer has no patch.
Admitted Admit(json pod, const std::string& uid, const ReviewContext& context) {
  // The pod moves into the review and back out once it is written: no copy per arrival.
  json review = ReviewOf(std::move(pod), uid);
  std::string request = review.dump();
  pod = std::move(review["request"]["object"]);
  auto answer = Review(request, context);
  if (!answer.ok()) return {std::move(pod)};
  json body = json::parse(answer.value().body, nullptr, /*allow_exceptions=*/false);
  const json& encoded = At(body, {"response", "patch"});
  if (!encoded.is_string()) return {std::move(pod)};
  auto text = Base64Decode(encoded.get<std::string>());
  if (!text.ok()) return {std::move(pod)};
  json ops = json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  json patched;
  try {  // nlohmann's patch() throws on an operation that does not apply: the pod stays as it was
    patched = pod.patch(ops);
  } catch (const json::exception&) {
    return {std::move(pod)};
  }
  const json& annotations = At(patched, {"metadata", "annotations"});
  bool fell_back = annotations.contains(context.policy.Annotation("fallback"));
  bool shared = annotations.contains(context.policy.Annotation("applied-sharing-mode"));
  return {std::move(patched), fell_back, shared};
}

// One webhook replica's ledger as the Reservations its reviews consult, keeping the claims the
// last review committed so the replay can check them against every replica's ledger.
class ReplicaReservations final : public Reservations {
 public:
  ReplicaReservations(ReservationLedger& ledger, const ReservationLedger::TimePoint& now)
      : ledger_(ledger), now_(now) {}
  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override {
    return ledger_.Reserved(node, resource, except_key);
  }
  bool Holds(std::string_view key, std::string_view owner) const override {
    return ledger_.Holds(key, owner);
  }
  std::vector<Claim> HeldUnder(std::string_view key) const override {
    return ledger_.HeldUnder(key);
  }
  std::vector<Claim> HeldFor(std::string_view owner) const override {
    return ledger_.HeldFor(owner);
  }
  bool Commit(const std::string& key, const std::string& owner,
              const std::vector<Claim>& claims) override {
    if (!ledger_.Commit(key, owner, claims, now_)) return false;
    committed_ = claims;
    return true;
  }
  std::vector<Claim> TakeCommitted() { return std::exchange(committed_, {}); }

 private:
  ReservationLedger& ledger_;
  const ReservationLedger::TimePoint& now_;
  std::vector<Claim> committed_;
};

enum class Step { kArrive, kVisible, kSchedule, kDepart, kQueueTimeout };

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
  std::string key;        // namespace/name
  std::string preferred;  // the node gpuadmit's preferred affinity names, "" for none
  std::optional<size_t> node;
  bool visible = false;        // in the watch
  bool unschedulable = false;  // the scheduler found no node for it
  bool gated = false;          // waiting in the capacity queue
  double demand_gpus = 0;
};

json Unschedulable(json pod) {
  pod["status"] = {
      {"phase", "Pending"},
      {"conditions",
       {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}}}};
  return pod;
}

}  // namespace

Result<ReplayResult> Replay(const json& cluster, std::span<const Arrival> arrivals,
                            const Policy* policy, const ReplayOptions& options) {
  const json& items = At(cluster, {"items"});
  if (!items.is_array()) return Error{"the cluster list has no \"items\" array"};
  if (options.replicas < 1) return Error{"replicas must be at least 1"};
  // The key the policy's decisions write their reservations under (the baseline writes none).
  const std::string reservation = policy != nullptr ? policy->Annotation("reservation")
                                                    : Policy{}.Annotation("reservation");
  ClusterState state(reservation);
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
  ReplayResult result;
  // A pod asking for shared replicas as created is counted at the first shared node's replicas.
  int64_t demand_replicas = 0;
  for (const SimNode& n : nodes) {
    int64_t replicas = ReplicasPerGpu(*n.facts);
    result.capacity_gpus += GpuEquivalents(n.allocatable.extended, replicas);
    if (int64_t shared = Get(n.allocatable.extended, "nvidia.com/gpu.shared"); shared > 0) {
      result.shared_gpus += static_cast<double>(shared) / static_cast<double>(replicas);
      if (demand_replicas == 0) demand_replicas = replicas;
    }
  }
  auto held = [&](const SimPod& pod, const SimNode& node) {
    return GpuEquivalents(pod.requests.extended, ReplicasPerGpu(*node.facts));
  };
  for (const json& item : items) {
    if (StringAt(item, {"kind"}) != "Pod") continue;
    PodRecord record = ReadPod(item, reservation);
    if (record.terminal) continue;
    if (auto at = node_index(record.node)) {
      SimPod pod = SimPodFromSpec(item["spec"]);
      Bind(pod, nodes[*at]);
      result.allocated_gpus += held(pod, nodes[*at]);
    }
    state.UpsertPod(std::move(record));
  }
  RoomIndex room(nodes);

  double now = 0;
  ReservationLedger::TimePoint now_point;  // `now` as the ledgers' time
  std::vector<ReservationLedger> ledgers(options.replicas, ReservationLedger(kReservationTtl));
  std::vector<ReplicaReservations> replicas;
  for (ReservationLedger& l : ledgers) replicas.emplace_back(l, now_point);
  std::vector<PodState> pods(arrivals.size());
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (StringAt(arrivals[i].pod, {"metadata", "name"}).empty()) {
      return Error{"arrival " + std::to_string(i) + ": the pod has no metadata.name"};
    }
    events.push({arrivals[i].at, seq++, Step::kArrive, i});
  }

  // Devices of `claims` beyond what their nodes have once every replica's reservations count.
  auto beyond_capacity = [&](const std::vector<Claim>& claims, const InventorySnapshot& seen) {
    int64_t over = 0;
    for (const Claim& c : claims) {
      const NodeInventory* n = seen.FindNode(c.node);
      if (n == nullptr) continue;
      int64_t promised = Get(n->used, c.resource) + Get(n->queued, c.resource);
      for (const ReservationLedger& l : ledgers) promised += l.Reserved(c.node, c.resource, "");
      int64_t allocatable = Get(n->facts->allocatable, c.resource);
      over += std::clamp<int64_t>(promised - allocatable, 0, c.count);
    }
    return over;
  };

  // The watch delivers `pod`: the inventory has it, and every ledger drops its reservation.
  auto watch = [&](const json& pod) {
    state.UpsertPod(ReadPod(pod, reservation));
    for (const std::string& key : state.TakeArrivedReservations()) {
      for (ReservationLedger& l : ledgers) l.Release(key);
    }
  };

  SchedulerSearch search{0, options.percentage_of_nodes_to_score};
  InventorySnapshot snapshot;  // what reviews see, refreshed in place before each
  PendingPods pending;         // offered to the scheduler, not bound, in arrival order
  uint64_t version = 0;
  size_t next_replica = 0;
  // The capacity queue (policy queue enabled): the nodes' room as it sees it, kept up to date
  // on every bind and departure, and the pods it holds by key.
  const bool queueing = policy != nullptr && policy->queue.enabled;
  CapacityQueue queue(policy != nullptr ? static_cast<double>(policy->queue.timeout_seconds) : 0);
  std::vector<NodeRoom> rooms;
  std::map<std::string, size_t, std::less<>> queued_index;  // key -> pod
  auto refresh_room = [&](size_t n) { rooms[n] = RoomOf(nodes[n]); };
  if (queueing) {
    for (const SimNode& n : nodes) rooms.push_back(RoomOf(n));
  }
  // The replay gates a pod itself, when the scheduler would take it (Step::kSchedule), so the
  // reviews run without the admission's queue gate (core/plan/queue_gate.h): a gate on the pod
  // object would take it out of the queued demand the snapshot counts.
  Policy reviewed = policy != nullptr ? *policy : Policy{};
  reviewed.queue.enabled = false;
  // Binds pod `i` to node `at`, as the scheduler does once it has chosen.
  auto bind = [&](size_t i, size_t at) {
    PodState& p = pods[i];
    SimNode& node = nodes[at];
    Bind(p.sim, node);
    room.Update(at, node);
    if (queueing) refresh_room(at);
    p.node = at;
    result.allocated_gpus += held(p.sim, node);
    json bound = std::move(p.object);  // a bound pod's object is not read again
    bound["spec"]["nodeName"] = node.facts->name;
    bound["status"] = {{"phase", "Running"}};
    watch(bound);
    p.visible = true;
    result.waits.push_back(now - arrivals[i].at);
    if (p.demand_gpus > 1) result.multi_gpu_waits.push_back(now - arrivals[i].at);
    if (!p.preferred.empty()) {
      ++result.preferred;
      result.preferred_honoured += p.preferred == node.facts->name ? 1 : 0;
    }
    for (const auto& [resource, count] : p.sim.requests.extended) {
      if (IsManagedResource(resource) && count > 0) ++result.placed_by_resource[resource];
    }
    if (p.demand_gpus > 0) ++result.gpu_pods_placed;
    if (arrivals[i].duration) events.push({now + *arrivals[i].duration, seq++, Step::kDepart, i});
  };
  // Binds pod `i` where the scheduler model puts it; false when no node takes it.
  auto try_bind = [&](size_t i) {
    PodState& p = pods[i];
    std::optional<size_t> at = room.MayFit(p.sim)
                                   ? Schedule(p.sim, nodes, &search, room.WithRoomFor(p.sim))
                                   : std::nullopt;
    if (!at) {
      if (!p.unschedulable && p.visible) watch(Unschedulable(p.object));
      p.unschedulable = true;
      return false;
    }
    bind(i, *at);
    return true;
  };
  // A pod left node `n`: the pending pods are tried again, in arrival order. Each was refused by
  // every node when last tried (a search that finds nothing has filtered them all), and since
  // then only departures have made room, each followed by this step: `n` is the one node that
  // may take them now, so the check is one node per pending pod, not the whole cluster.
  auto retry_pending_on = [&](size_t n) {
    pending.OfferTo(nodes[n], [&](size_t i) {
      if (!Passes(pods[i].sim, nodes[n])) return false;
      bind(i, n);
      return true;
    });
  };

  auto asks_gpu = [](const SimPod& pod) {
    return std::any_of(pod.requests.extended.begin(), pod.requests.extended.end(),
                       [](const auto& e) { return e.second > 0 && IsManagedResource(e.first); });
  };
  // The queue's releases, acted on: capacity binds where the queue counted, the rest go to the
  // scheduler.
  auto lift = [&] {
    for (const LiftedPod& l : queue.Lift(rooms, now)) {
      size_t i = queued_index.at(l.key);
      queued_index.erase(l.key);
      pods[i].gated = false;
      if (l.reason == LiftReason::kTimeout) ++result.queue_timeouts;
      if (l.reason == LiftReason::kUnplaceable) ++result.queue_unplaceable;
      if (l.reason == LiftReason::kCapacity && Passes(pods[i].sim, nodes[l.node])) {
        bind(i, l.node);
        continue;
      }
      if (!try_bind(i)) pending.Push(i, pods[i].sim);
    }
  };
  // Pod `i` waits gated: the queue holds it with the nodes it may use, its timeout comes.
  auto gate = [&](size_t i) {
    PodState& p = pods[i];
    QueuedPod q = QueuedPodOf(p.key, arrivals[i].at, p.object, p.sim, nodes);
    if (!p.unschedulable && p.visible) watch(Unschedulable(p.object));  // holds no demand
    p.unschedulable = true;
    p.gated = true;
    queued_index[p.key] = i;
    queue.Add(std::move(q));
    events.push({arrivals[i].at + static_cast<double>(policy->queue.timeout_seconds), seq++,
                 Step::kQueueTimeout, i});
    lift();
    if (p.gated) ++result.queued;  // not released by the lift it joined
  };

  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    now = e.at;
    now_point = SimTime(now);
    PodState& p = pods[e.pod];
    switch (e.step) {
      case Step::kArrive: {
        result.curve.push_back({result.demand_gpus, result.allocated_gpus, now});
        ++result.arrived;
        json object = arrivals[e.pod].pod;
        if (!object["metadata"].contains("namespace")) object["metadata"]["namespace"] = "default";
        p.demand_gpus = GpuEquivalents(ReadPodRequirements(object["spec"]).effective,
                                       std::max<int64_t>(demand_replicas, 1));
        result.demand_gpus += p.demand_gpus;
        if (p.demand_gpus > 0) ++result.gpu_pods_arrived;
        if (policy != nullptr) {
          ReplicaReservations& replica = replicas[next_replica];
          ledgers[next_replica].Expire(now_point);
          next_replica = (next_replica + 1) % replicas.size();
          state.Refresh(snapshot, ++version);
          ReviewContext context{snapshot, reviewed, nullptr, &replica};
          Admitted admitted = Admit(std::move(object), "sim-" + std::to_string(e.pod), context);
          object = std::move(admitted.pod);
          result.fallbacks += admitted.fell_back ? 1 : 0;
          result.sharing_conversions += admitted.shared ? 1 : 0;
          std::vector<Claim> claims = replica.TakeCommitted();
          if (options.replicas > 1) result.counted_twice += beyond_capacity(claims, snapshot);
          p.preferred = PreferredHostname(object["spec"]);
        }
        p.object = std::move(object);
        p.sim = SimPodFromSpec(p.object["spec"]);
        p.key = ObjectKey(p.object);
        events.push({now + options.watch_delay, seq++, Step::kVisible, e.pod});
        events.push({now + options.bind_delay, seq++, Step::kSchedule, e.pod});
        break;
      }
      case Step::kVisible:
        if (!p.visible) {  // still unbound: the watch shows it queued
          json queued = p.unschedulable ? Unschedulable(p.object) : p.object;
          if (!p.unschedulable) queued["status"] = {{"phase", "Pending"}};
          watch(queued);
          p.visible = true;
        }
        break;
      case Step::kSchedule: {
        std::string ns = StringAt(p.object, {"metadata", "namespace"});
        bool queued =
            queueing && asks_gpu(p.sim) && policy->queue.Queues(ns) && !policy->IsExempt(ns);
        if (queued && queue.size() > 0) {
          gate(e.pod);
        } else if (!try_bind(e.pod)) {
          if (queued) {
            gate(e.pod);
          } else {
            pending.Push(e.pod, p.sim);
          }
        }
        break;
      }
      case Step::kQueueTimeout:
        if (p.gated) lift();
        break;
      case Step::kDepart: {
        size_t n = *p.node;
        Unbind(p.sim, nodes[n]);
        room.Update(n, nodes[n]);
        result.allocated_gpus -= held(p.sim, nodes[n]);
        p.node.reset();
        state.DeletePod(p.key);
        retry_pending_on(n);
        if (queueing) {
          refresh_room(n);
          if (queue.size() > 0) lift();
        }
        break;
      }
    }
  }
  result.curve.push_back({result.demand_gpus, result.allocated_gpus, now});
  result.queue_waiting = static_cast<int>(queue.size());
  result.pending = static_cast<int>(pending.size() + queue.size());
  result.placed = result.arrived - result.pending;
  return result;
}

}  // namespace gpuadmit
