// Reflector: keeps one kind of Kubernetes object (nodes or pods) mirrored into a sink, the way
// client-go's reflector does. List in pages (limit + continue), then watch from the list's
// resourceVersion with bookmarks and a randomised 5-10 min timeoutSeconds; a watch that ends
// cleanly is resumed, 410 Gone (as an HTTP status, an ERROR event, or an expired continue token)
// relists, and transport failures back off with jitter: 0.8 s doubling to 30 s, reset after 2 min
// of health.
//
//   Reflector pods(api, clock, log, {.path = "/api/v1/pods", .field_selector = kNonTerminalPods},
//                  sink);
//   std::thread t([&] { pods.Run(); });  ...  pods.Stop(); t.join();
//
// Thread safety: Run on one thread; Stop, Synced and DownSince from any thread. The sink is
// called from the Run thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <string_view>

#include "core/json/json_view.h"
#include "webhook/kube/kube_api.h"
#include "webhook/os/clock.h"
#include "webhook/telemetry/log.h"

namespace gpuadmit {

// What a reflector feeds. A relist arrives as Begin, one Add per object, then Commit (or Abort,
// when the list failed part way and the sink should keep what it had). An object is a view of
// the parsed page or event, valid only during the call.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  virtual void BeginReplace() = 0;
  virtual void Add(JsonView object) = 0;
  virtual void CommitReplace() = 0;
  virtual void AbortReplace() = 0;
  // A watch event: "ADDED", "MODIFIED" or "DELETED".
  virtual void Apply(std::string_view type, JsonView object) = 0;
};

struct ReflectorOptions {
  std::string path;                         // e.g. "/api/v1/pods"
  std::string field_selector;               // already URL-encoded; "" for none
  int page_size = 500;
  // client-go's constants: 800 ms doubling to 30 s, with up to 100% jitter, reset after 2 min
  // healthy; tests shrink them.
  std::chrono::milliseconds initial_backoff{800};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds backoff_reset{120000};
  // The watch's timeoutSeconds is drawn from [min, 2 * min], as client-go does with 5 min, so
  // that many watchers do not all reconnect at once.
  int min_watch_timeout_seconds = 300;
  // A 404 on the list means the API is not served (resource.k8s.io on a cluster without DRA),
  // a 403 that gpuadmit may not read it (a ClusterRole from an older release; logged as a
  // warning): either way the kind counts as listed and empty, is not down, and is listed again
  // after each backoff.
  bool absent_is_empty = false;
};

class Reflector {
 public:
  Reflector(KubeApi& api, const Clock& clock, Logger& log, ReflectorOptions options,
            ReflectorSink& sink);

  // Lists and watches until Stop().
  void Run();
  // Ends Run soon: cancels the request in flight and wakes a backoff wait.
  void Stop();

  // True once a full list has been delivered.
  bool Synced() const { return synced_.load(); }
  // When the watch went down (time_point{} while it is up, or before the first connection).
  std::chrono::steady_clock::time_point DownSince() const;
  // How many relists happened (for tests and metrics).
  int relists() const { return relists_.load(); }

 private:
  enum class WatchEnd { kResume, kRelist, kBackoff };

  bool List();
  WatchEnd Watch();
  // Waits the next backoff step, or less if Stop() comes; false when stopping.
  bool Backoff();
  void MarkUp();
  void MarkDown();
  bool stopping() const { return stopping_.load(); }

  KubeApi& api_;
  const Clock& clock_;
  Logger& log_;
  ReflectorOptions options_;
  ReflectorSink& sink_;

  std::string resource_version_;
  std::chrono::milliseconds backoff_;
  std::chrono::steady_clock::time_point healthy_since_;
  bool absent_ = false;  // the last list was a 404 under absent_is_empty (Run thread only)
  std::mt19937 random_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::atomic<int> relists_{0};
  std::atomic<int64_t> down_since_ns_{1};  // 1: never connected yet; 0: up
  std::mutex mu_;
  std::condition_variable wake_;
};

// The field selector that leaves Succeeded and Failed pods out of lists and watches (URL-encoded
// "status.phase!=Succeeded,status.phase!=Failed"): they hold no devices.
inline constexpr std::string_view kNonTerminalPods =
    "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";

}  // namespace gpuadmit
