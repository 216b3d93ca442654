// GPU metrics sources: a poller that keeps the cluster's latest DCGM metrics, and their short
// history, fresh off the request path. It reads Prometheus' HTTP query API (`--prometheus URL`)
// or a file of exposition text (`--dcgm-file FILE`, for local runs) through GpuMetricsReader,
// and publishes each good reading whole as a std::shared_ptr<const ClusterGpuMetrics>.
//
//   auto reader = MakePrometheusReader("http://prometheus.monitoring:9090");
//   if (!reader.ok()) -> reader.error().message
//   GpuMetricsPollerOptions options;
//   options.source = url;
//   GpuMetricsPoller poller(std::move(reader).value(), clock, log, options);
//   poller.Start();                                                // polls now, then every 15 s
//   std::shared_ptr<const ClusterGpuMetrics> metrics = poller.Latest();   // from any thread
//   poller.Stop();
//
// Degraded modes: a read that fails (Prometheus down, slow, or answering garbage) keeps the
// last good metrics, counts a failure, and logs one line when the source goes from up to
// failing and one when it comes back, not one per poll. Nothing here throws.
//
// Thread safety: Latest() and status() may be called from any thread. Start, Stop and PollOnce
// are for the owner's thread; PollOnce only while the poller is not started. A reader is used
// by one thread at a time, except Cancel, which may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "core/inventory/gpu_metrics.h"
#include "core/result.h"
#include "webhook/os/clock.h"
#include "webhook/telemetry/log.h"

namespace gpuadmit {

// What the inventory consults.
class GpuMetricsSource {
 public:
  virtual ~GpuMetricsSource() = default;
  // The newest good metrics; never null (empty until the first good read).
  virtual std::shared_ptr<const ClusterGpuMetrics> Latest() const = 0;
};

// One way of reading every GPU's current values.
class GpuMetricsReader {
 public:
  virtual ~GpuMetricsReader() = default;
  // Reads once. Errors say what failed and where (connect, HTTP status, an unreadable answer).
  virtual Result<GpuReading> Read() = 0;
  // Ends a Read in progress soon and fails later ones. Any thread.
  virtual void Cancel() = 0;
};

struct PrometheusReaderOptions {
  GpuReadOptions labels;
  std::chrono::seconds connect_timeout{2};
  // Per socket read, and sent as the query's evaluation `timeout`: a slow Prometheus fails the
  // poll well inside the 15 s interval instead of stacking polls.
  std::chrono::seconds read_timeout{5};
  std::string ca_file;  // https: PEM bundle that signs Prometheus' certificate; empty: the system's
};

// A reader of `url` (http or https, host, optional port and path prefix, e.g.
// "https://thanos.example:9091/prometheus") that sends one instant query per DCGM metric,
// aggregated by the labels gpuadmit reads so that Prometheus drops the rest before answering.
// Errors: a malformed URL, a scheme other than http/https, a node label that is not a label name.
Result<std::unique_ptr<GpuMetricsReader>> MakePrometheusReader(
    std::string_view url, PrometheusReaderOptions options = {});

// A reader of the exposition text in `path`; the file is parsed again only when it changed
// (inode, size or modification time), so polling it often is cheap.
std::unique_ptr<GpuMetricsReader> MakeDcgmFileReader(std::string path, GpuReadOptions options = {});

// The reader the command line asks for: Prometheus when `prometheus_url` is set, else the DCGM
// exposition file. Errors as MakePrometheusReader's.
Result<std::unique_ptr<GpuMetricsReader>> MakeGpuMetricsReader(const std::string& prometheus_url,
                                                               const std::string& dcgm_file);

struct GpuMetricsPollerOptions {
  std::string source;                                             // for log lines: the URL or file
  std::chrono::milliseconds interval = std::chrono::seconds(15);  // dcgm-exporter's default
  MetricsWindowOptions window;
  // Called on the polling thread with each newly published metrics (what Latest() returns
  // next), e.g. to rename hosts and hand them to the admission handler; may be empty.
  std::function<void(std::shared_ptr<const ClusterGpuMetrics>)> on_publish;
};

// dcgm-exporter's host label is often its own pod's name, not its node's: pod name -> node
// name of every bound Pod in a cluster list (`kubectl get nodes,pods -A -o json`), for
// RenameNodes. Pods of every namespace: a name in two namespaces keeps the first.
std::map<std::string, std::string, std::less<>> PodNodesOf(const nlohmann::json& cluster_list);

struct GpuMetricsPollerStatus {
  uint64_t reads_ok = 0;
  uint64_t reads_failed = 0;  // a counter for /metrics: every failed poll
  uint64_t consecutive_failures = 0;
  std::string last_error;  // of the latest failed read; empty once a read succeeds
  MetricsTime last_good_at{};
  bool has_metrics = false;  // at least one read succeeded

  bool operator==(const GpuMetricsPollerStatus&) const = default;
};

class GpuMetricsPoller final : public GpuMetricsSource {
 public:
  // `clock` stamps each reading (the window's time base) and `log` gets the state changes;
  // both must outlive the poller.
  GpuMetricsPoller(std::unique_ptr<GpuMetricsReader> reader, const Clock& clock, Logger& log,
                   GpuMetricsPollerOptions options = {});
  ~GpuMetricsPoller() override;  // Stop()s
  GpuMetricsPoller(const GpuMetricsPoller&) = delete;
  GpuMetricsPoller& operator=(const GpuMetricsPoller&) = delete;

  // Starts the polling thread: a read at once, then one every interval. A second call does
  // nothing.
  void Start();
  // Wakes the thread from its wait, cancels a read in progress and joins. Idempotent; later
  // reads fail. Returns within the reader's cancel latency: milliseconds for an HTTP request
  // in flight (its socket is shut down), at most connect_timeout while still connecting.
  void Stop();
  // One read and, when it succeeds, one publish, on the calling thread; true on success. For
  // tests and one-shot commands (`gpuadmit inventory`).
  bool PollOnce();

  std::shared_ptr<const ClusterGpuMetrics> Latest() const override;
  GpuMetricsPollerStatus status() const;

 private:
  enum class Health { kUnknown, kUp, kFailing };
  void Run();
  void RecordSuccess(const GpuReading& reading, MetricsTime at);
  void RecordFailure(const std::string& error);

  std::unique_ptr<GpuMetricsReader> reader_;
  const Clock& clock_;
  Logger& log_;
  const GpuMetricsPollerOptions options_;
  GpuMetricsHistory history_;  // the polling thread's (or PollOnce's caller's) alone
  std::atomic<std::shared_ptr<const ClusterGpuMetrics>> latest_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  GpuMetricsPollerStatus status_;
  Health health_ = Health::kUnknown;
  size_t logged_unattributed_ = 0;  // the last counts logged, to log only their changes
  size_t logged_skipped_ = 0;
  std::thread thread_;
};

}  // namespace gpuadmit
