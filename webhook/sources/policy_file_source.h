// PolicyFileSource: serve's --policy file, loaded at start and again whenever it changes (an
// edit, or a ConfigMap mount swapping its `..data` symlink; see FileReloader). A changed file
// that does not validate is refused: the last good policy stays in force, and a warning line
// (the file and its first issue, "FILE:LINE:COL: message") and a counter say so.
//
//   PolicyFileSource policy(path, [&](auto p) { handler.SetPolicy(std::move(p)); }, metrics, log);
//   if (!policy.Load(/*initial=*/true)) return ConfigError(policy.error());
//   policy.Start();
//
// Thread safety: Load and CheckNow from one thread at a time; after Start, the reloader's thread
// calls Load and `publish`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/policy/policy.h"
#include "webhook/os/file_reloader.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

class PolicyFileSource {
 public:
  using Publish = std::function<void(std::shared_ptr<const Policy>)>;

  // 1 s: a ConfigMap update reaches the mount within the kubelet's sync period (about a
  // minute), so polling faster buys nothing and slower adds little.
  static constexpr std::chrono::milliseconds kDefaultInterval{1000};

  PolicyFileSource(std::string path, Publish publish, Metrics& metrics, Logger& log,
                   std::chrono::milliseconds interval = kDefaultInterval);

  // What the server can act on, beyond validity: "" to accept a valid policy, else why it is
  // refused (serve: queue.enabled without the Kubernetes API, or on a cluster older than 1.30).
  // A refused policy is treated as an invalid one: the first load fails, a reload keeps the last
  // good policy. Set before Load; by default every valid policy is accepted.
  using Servable = std::function<std::string(const Policy&)>;
  void SetServable(Servable servable) { servable_ = std::move(servable); }

  // Loads and validates the file and publishes it. On failure keeps what was published before,
  // stores every issue in error() and, unless `initial`, logs a warning and counts it. True
  // when the file was published.
  bool Load(bool initial);

  // Polls for changes on a thread of its own.
  void Start();
  // One poll, instead of Start (tests): reloads when the file changed; true when it did.
  bool CheckNow();

  // Every issue of the last failed load, one "FILE:LINE:COL: message" per line.
  const std::string& error() const { return error_; }

  // The policy in force as its file said it when it loaded (null before the first load), and
  // when that was (ms since the epoch): what the status page shows. Any thread.
  struct Loaded {
    std::string path;
    std::string text;
    int64_t at_unix_ms = 0;
  };
  std::shared_ptr<const Loaded> loaded() const { return loaded_.load(); }

 private:
  std::string path_;
  Publish publish_;
  Metrics& metrics_;
  Logger& log_;
  Servable servable_;
  std::string error_;
  std::atomic<std::shared_ptr<const Loaded>> loaded_;
  FileReloader reloader_;
};

}  // namespace gpuadmit
