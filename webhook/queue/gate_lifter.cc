#include "webhook/queue/gate_lifter.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/json/json_reader.h"
#include "core/plan/queue_gate.h"
#include "webhook/queue/gate_patch.h"
#include "webhook/queue/live_queue.h"
#include "webhook/queue/queue_event.h"

namespace gpuadmit {
namespace {

// A release the snapshot has not shown yet keeps its room this long at most: the watch shows it
// within a second, and a patch that the apiserver took but lost cannot hold room for ever.
constexpr int64_t kInFlightMs = 30'000;
// Failures are logged at most this often, with how many there were since.
constexpr int64_t kFailureLogMs = 30'000;

Counter LiftCounter(LiftReason reason) {
  switch (reason) {
    case LiftReason::kCapacity:
      return Counter::kQueueLiftsCapacity;
    case LiftReason::kTimeout:
      return Counter::kQueueLiftsTimeout;
    case LiftReason::kUnplaceable:
      return Counter::kQueueLiftsUnplaceable;
    case LiftReason::kDisabled:
      return Counter::kQueueLiftsDisabled;
  }
  return Counter::kQueueLiftsCapacity;
}

std::string Seconds(double s) { return std::to_string(std::llround(std::max(s, 0.0))) + "s"; }

// What the <prefix>/queue annotation says once the gate is lifted.
std::string LiftNote(const LiftedPod& lift, const std::string& node, int64_t timeout_s) {
  switch (lift.reason) {
    case LiftReason::kCapacity:
      return "lifted: capacity on " + node + " after " + Seconds(lift.waited);
    case LiftReason::kTimeout:
      return "lifted: waited " + Seconds(lift.waited) + ", the timeout (" +
             std::to_string(timeout_s) + "s); capacity never came";
    case LiftReason::kUnplaceable:
      return "lifted: no node it may use can ever hold it";
    case LiftReason::kDisabled:
      return "lifted: the policy no longer queues its namespace";
  }
  return "lifted";
}

// "ns/name" split at the first slash.
std::pair<std::string, std::string> SplitKey(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

GateLifter::GateLifter(KubeClient& api, const AdmissionHandler& handler, Logger& log,
                       Metrics& metrics, GateLifterOptions options)
    : api_(api), handler_(handler), log_(log), metrics_(metrics), options_(std::move(options)) {}

GateLifter::~GateLifter() { Stop(); }

void GateLifter::Start() {
  thread_ = std::thread([this] { Run(); });
}

void GateLifter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GateLifter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    RunOnce();
    lock.lock();
    wake_.wait_for(lock, options_.interval, [this] { return stop_; });
  }
}

int64_t GateLifter::NowMs() const {
  if (options_.now_unix_ms) return options_.now_unix_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

GateLifter::Pass GateLifter::RunOnce() {
  Pass pass;
  std::shared_ptr<const Policy> policy = handler_.policy();
  std::shared_ptr<const InventorySnapshot> snapshot = handler_.snapshot();
  if (policy == nullptr || snapshot == nullptr) return pass;
  const std::string gate = CapacityGate(*policy);
  const std::string annotation = policy->Annotation("queue");
  const int64_t now_ms = NowMs();
  const double now = static_cast<double>(now_ms) / 1000.0;

  // The pods the snapshot shows gated; a release in flight the snapshot now shows done (or too
  // old to wait for) is forgotten.
  std::map<std::string, QueuedPod> gated;
  for (const PodRecord& pod : snapshot->gated()) {
    if (auto q = QueuedPodOf(pod, gate, snapshot->nodes())) gated.emplace(pod.key, std::move(*q));
  }
  std::erase_if(in_flight_, [&](const auto& entry) {
    return !gated.contains(entry.first) || now_ms - entry.second.at_ms > kInFlightMs;
  });
  for (const auto& [key, flight] : in_flight_) gated.erase(key);
  metrics_.SetQueueWaiting(static_cast<int64_t>(gated.size()));
  pass.waiting = gated.size();
  if (gated.empty() || (options_.leading && !options_.leading())) return pass;

  // Pods the policy no longer queues are released first, whatever room there is.
  std::vector<LiftedPod> lifts;
  for (auto it = gated.begin(); it != gated.end();) {
    if (policy->queue.enabled && policy->queue.Queues(SplitKey(it->first).first)) {
      ++it;
      continue;
    }
    lifts.push_back({it->first, LiftReason::kDisabled, 0, now - it->second.arrived_at});
    it = gated.erase(it);
  }
  std::vector<NodeRoom> rooms = RoomsOf(*snapshot);
  for (const auto& [key, flight] : in_flight_) {
    // RoomsOf keeps the snapshot's node order.
    std::optional<size_t> at = IndexOfNode(snapshot->nodes(), flight.node);
    if (!at) continue;
    for (const auto& [resource, count] : flight.ask) {
      if (auto f = rooms[*at].free.find(resource); f != rooms[*at].free.end()) {
        f->second = std::max<int64_t>(f->second - count, 0);
      }
    }
  }
  std::map<std::string, ResourceList> asks;
  CapacityQueue queue(static_cast<double>(policy->queue.timeout_seconds));
  for (auto& [key, pod] : gated) {
    asks[key] = pod.ask;
    queue.Add(std::move(pod));
  }
  std::vector<LiftedPod> by_queue = queue.Lift(rooms, now);
  lifts.insert(lifts.end(), by_queue.begin(), by_queue.end());

  for (const LiftedPod& lift : lifts) {
    bool pinned = lift.reason == LiftReason::kCapacity && lift.node < rooms.size();
    std::string node = pinned ? rooms[lift.node].name : "";
    std::string note = LiftNote(lift, node, policy->queue.timeout_seconds);
    if (!Release(lift, node, gate, {annotation, std::move(note)}, pass)) continue;
    InFlight flight{node, {}, now_ms};
    if (pinned) flight.ask = asks[lift.key];
    in_flight_[lift.key] = std::move(flight);
  }
  pass.waiting = queue.size() + (pass.conflicts + pass.failures);
  metrics_.SetQueueWaiting(static_cast<int64_t>(pass.waiting));
  return pass;
}

bool GateLifter::Release(const LiftedPod& lift, const std::string& node, const std::string& gate,
                         const std::pair<std::string, std::string>& note, Pass& pass) {
  auto [ns, name] = SplitKey(lift.key);
  const std::string path = PodPath(ns, name);
  auto read = api_.Send("GET", path);
  if (!read.ok() || (read.value().status != 200 && read.value().status != 404)) {
    ++pass.failures;
    NoteFailure(lift.key, read.ok() ? "GET: HTTP " + std::to_string(read.value().status)
                                    : "GET: " + read.error().message);
    return false;
  }
  if (read.value().status == 404) return false;  // deleted while it waited
  auto pod = ParseJson(read.value().body);
  if (!pod.ok() || !pod.value().is_object()) {
    ++pass.failures;
    NoteFailure(lift.key, "GET: not a JSON object");
    return false;
  }
  // Released already (another leader, or a person); the snapshot has not caught up.
  if (!HasGate(pod.value(), gate)) return false;

  nlohmann::json patch = LiftPatch(pod.value(), gate, note, node);
  auto patched = api_.Send("PATCH", path, patch.dump(), "application/merge-patch+json");
  if (!patched.ok()) {
    ++pass.failures;
    NoteFailure(lift.key, "PATCH: " + patched.error().message);
    return false;
  }
  if (patched.value().status == 409) {
    ++pass.conflicts;
    metrics_.Inc(Counter::kQueueLiftConflicts);
    log_.Debug("queue: pod changed since read; next pass", {{"pod", lift.key}});
    return false;
  }
  if (patched.value().status == 404) return false;
  if (patched.value().status != 200) {
    ++pass.failures;
    NoteFailure(lift.key, "PATCH: HTTP " + std::to_string(patched.value().status) + ": " +
                              patched.value().body.substr(0, 300));
    return false;
  }

  pass.lifted.push_back(lift);
  metrics_.Inc(LiftCounter(lift.reason));
  metrics_.ObserveQueueWait(lift.waited);
  std::string reason(LiftReasonName(lift.reason));
  std::string waited = Seconds(lift.waited);
  log_.Info("queue: gate lifted",
            {{"pod", lift.key}, {"reason", reason}, {"node", node}, {"waited", waited}});
  if (lift.reason == LiftReason::kTimeout || lift.reason == LiftReason::kUnplaceable) {
    bool timeout = lift.reason == LiftReason::kTimeout;
    std::string message =
        timeout ? "Waited " + waited + " (the queue's timeout) for GPU capacity that never came; " +
                      "gate " + gate + " lifted, the scheduler takes it from here"
                : "No node this pod may use can ever hold what it asks; gate " + gate +
                      " lifted, the scheduler takes it from here";
    nlohmann::json event =
        QueueEvent(pod.value(), timeout ? "CapacityWaitTimedOut" : "CapacityUnplaceable", message,
                   options_.instance, NowMs());
    auto posted = api_.Send("POST", "/api/v1/namespaces/" + ns + "/events", event.dump());
    if (!posted.ok() || posted.value().status >= 300) {
      NoteFailure(lift.key,
                  "POST event: " + (posted.ok() ? "HTTP " + std::to_string(posted.value().status)
                                                : posted.error().message));
    }
  }
  return true;
}

void GateLifter::NoteFailure(const std::string& key, const std::string& why) {
  metrics_.Inc(Counter::kQueueLiftFailures);
  int64_t now = NowMs();
  if (last_failure_log_ms_ != 0 && now - last_failure_log_ms_ < kFailureLogMs) {
    ++failures_unlogged_;
    return;
  }
  log_.Warn(
      "queue: could not lift a gate; will retry",
      {{"pod", key}, {"error", why}, {"failures_not_logged", std::to_string(failures_unlogged_)}});
  last_failure_log_ms_ = now;
  failures_unlogged_ = 0;
}

}  // namespace gpuadmit
