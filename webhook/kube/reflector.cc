#include "webhook/kube/reflector.h"

#include <algorithm>

#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

// A List page or a watch event on simdjson's tape: the sink reads what it needs through
// JsonView, and nothing else is built.
Result<std::unique_ptr<const JsonTape>> Parse(std::string_view text) {
  std::string refusal;
  auto tape = JsonTape::Parse(text, kMaxJsonDepth, &refusal);
  if (tape == nullptr) return Error{refusal};
  return tape;
}

}  // namespace

Reflector::Reflector(KubeApi& api, const Clock& clock, Logger& log, ReflectorOptions options,
                     ReflectorSink& sink)
    : api_(api),
      clock_(clock),
      log_(log),
      options_(std::move(options)),
      sink_(sink),
      backoff_(options_.initial_backoff),
      random_(std::random_device{}()) {}

void Reflector::Run() {
  while (!stopping()) {
    if (!List()) {
      if (!absent_) MarkDown();
      if (!Backoff()) return;
      continue;
    }
    while (!stopping()) {
      WatchEnd end = Watch();
      if (end == WatchEnd::kRelist) {
        relists_.fetch_add(1);
        break;
      }
      if (end == WatchEnd::kBackoff) {
        MarkDown();
        if (!Backoff()) return;
      }
    }
  }
}

void Reflector::Stop() {
  stopping_.store(true);
  api_.Cancel();
  std::lock_guard<std::mutex> lock(mu_);
  wake_.notify_all();
}

std::chrono::steady_clock::time_point Reflector::DownSince() const {
  int64_t ns = down_since_ns_.load();
  return ns == 0 ? std::chrono::steady_clock::time_point{}
                 : std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

void Reflector::MarkUp() {
  if (down_since_ns_.exchange(0) != 0) healthy_since_ = clock_.Now();
  // A long healthy spell forgets past failures.
  if (clock_.Now() - healthy_since_ >= options_.backoff_reset) backoff_ = options_.initial_backoff;
}

void Reflector::MarkDown() {
  int64_t now = clock_.Now().time_since_epoch().count();
  int64_t expected = 0;
  down_since_ns_.compare_exchange_strong(expected, now);
}

bool Reflector::Backoff() {
  std::uniform_real_distribution<double> jitter(1.0, 2.0);  // client-go's jitter factor 1.0
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_ * jitter(random_));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait_for(lock, wait, [this] { return stopping(); });
  return !stopping();
}

bool Reflector::List() {
  std::string next;
  bool begun = false;
  while (!stopping()) {
    std::string path = options_.path + "?limit=" + std::to_string(options_.page_size);
    if (!options_.field_selector.empty()) path += "&fieldSelector=" + options_.field_selector;
    if (!next.empty()) path += "&continue=" + next;
    auto response = api_.List(path);
    if (!response.ok()) {
      log_.Warn("list failed", {{"path", options_.path}, {"error", response.error().message}});
      break;
    }
    if (response.value().status == 410 && !next.empty()) {
      // The continue token expired (the list took longer than etcd keeps it): start over.
      log_.Info("list continue token expired; listing again", {{"path", options_.path}});
      next.clear();
      if (begun) sink_.AbortReplace();
      begun = false;
      continue;
    }
    const int status = response.value().status;
    if ((status == 404 || status == 403) && options_.absent_is_empty && next.empty()) {
      // Not served (a cluster without the API), or not permitted (a ClusterRole from before it
      // was read): nothing of this kind, and no outage that would keep decisions waiting.
      if (!absent_ && status == 404) {
        log_.Info("not served; counted as empty", {{"path", options_.path}});
      }
      if (!absent_ && status == 403) {
        log_.Warn("list forbidden; counted as empty until the ClusterRole allows list and watch",
                  {{"path", options_.path}});
      }
      absent_ = true;
      if (!synced_.load()) {
        sink_.BeginReplace();
        sink_.CommitReplace();
        synced_.store(true);
      }
      MarkUp();
      return false;
    }
    absent_ = false;
    if (response.value().status != 200) {
      log_.Warn("list refused",
                {{"path", options_.path}, {"status", std::to_string(response.value().status)}});
      break;
    }
    auto page = Parse(response.value().body);
    if (!page.ok()) {
      log_.Warn("list page unreadable", {{"path", options_.path}, {"error", page.error().message}});
      break;
    }
    if (!begun) {
      sink_.BeginReplace();
      begun = true;
    }
    JsonView root = page.value()->root();
    for (JsonView item : root["items"].Elements()) sink_.Add(item);
    next = root.At({"metadata", "continue"}).string();
    if (next.empty()) {
      resource_version_ = root.At({"metadata", "resourceVersion"}).string();
      sink_.CommitReplace();
      synced_.store(true);
      MarkUp();
      return true;
    }
  }
  if (begun) sink_.AbortReplace();
  return false;
}

Reflector::WatchEnd Reflector::Watch() {
  std::uniform_int_distribution<int> spread(0, options_.min_watch_timeout_seconds);
  int timeout = options_.min_watch_timeout_seconds + spread(random_);
  std::string path = options_.path +
                     "?watch=1&allowWatchBookmarks=true&resourceVersion=" + resource_version_ +
                     "&timeoutSeconds=" + std::to_string(timeout);
  if (!options_.field_selector.empty()) path += "&fieldSelector=" + options_.field_selector;

  bool relist = false;
  auto status = api_.Watch(path, [&](std::string_view line) {
    MarkUp();
    auto event = Parse(line);
    if (!event.ok()) {
      log_.Warn("watch event unreadable",
                {{"path", options_.path}, {"error", event.error().message}});
      return true;
    }
    auto [type_value, object] = event.value()->root().Fields({"type", "object"});
    std::string_view type = type_value.string();
    if (type == "ERROR") {
      // 410 Gone: the resourceVersion is too old to resume from. Any other error: relist too.
      log_.Info("watch error event; listing again",
                {{"path", options_.path}, {"message", std::string(object["message"].string())}});
      relist = true;
      return false;
    }
    std::string_view version = object.At({"metadata", "resourceVersion"}).string();
    if (!version.empty()) resource_version_ = version;
    if (type == "ADDED" || type == "MODIFIED" || type == "DELETED") sink_.Apply(type, object);
    return true;
  });
  if (relist) return WatchEnd::kRelist;
  if (!status.ok()) {
    if (stopping()) return WatchEnd::kResume;
    log_.Warn("watch broke", {{"path", options_.path}, {"error", status.error().message}});
    return WatchEnd::kBackoff;
  }
  if (status.value() == 410) return WatchEnd::kRelist;
  if (status.value() != 200) {
    log_.Warn("watch refused",
              {{"path", options_.path}, {"status", std::to_string(status.value())}});
    return WatchEnd::kBackoff;
  }
  MarkUp();
  return WatchEnd::kResume;
}

}  // namespace gpuadmit
