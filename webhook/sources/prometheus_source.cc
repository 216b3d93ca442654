#include "webhook/sources/prometheus_source.h"

#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "core/inventory/prometheus_samples.h"
#include "core/json/json_fields.h"
#include "webhook/os/read_file.h"

namespace gpuadmit {
namespace {

// What went wrong before any answer, in words: httplib's own names ("Connection", "Read") say
// little in a log line.
std::string TransportError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "no answer (read failed or timed out)";
    case httplib::Error::Write:
      return "could not send the query";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
      return "TLS handshake failed: " + httplib::to_string(error);
    case httplib::Error::Canceled:
      return "cancelled";
    default:
      return httplib::to_string(error);
  }
}

// 64 MiB: 8x the aggregated answer for 5,000 nodes x 8 GPUs (about 200 bytes a series), and a
// bound on what a misconfigured URL (a huge page, an endless stream) can make us buffer.
constexpr size_t kMaxAnswerBytes = 64u << 20;

// Labels gpuadmit reads besides the node labels; `max by` over them drops every other label
// (pod, container, driver version...) and merges duplicates before Prometheus answers.
constexpr std::string_view kDeviceLabels[] = {"gpu", "UUID", "modelName", "GPU_I_PROFILE",
                                              "GPU_I_ID"};

bool IsLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

class PrometheusReader final : public GpuMetricsReader {
 public:
  PrometheusReader(std::string origin, std::string path_prefix, PrometheusReaderOptions options)
      : origin_(std::move(origin)),
        query_path_(std::move(path_prefix) + "/api/v1/query"),
        options_(std::move(options)),
        client_(origin_) {
    client_.set_connection_timeout(options_.connect_timeout);
    client_.set_read_timeout(options_.read_timeout);
    client_.set_write_timeout(options_.read_timeout);
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);  // 0.11.4 leaves Nagle on: 40 ms stalls per request
    if (!options_.ca_file.empty()) client_.set_ca_cert_path(options_.ca_file);
    std::string by;
    for (const std::string& label : options_.labels.node_labels) by += label + ",";
    for (std::string_view label : kDeviceLabels) by += std::string(label) + ",";
    by.pop_back();
    for (std::string_view metric : kDcgmMetricNames) {
      queries_.push_back(
          {std::string(metric), "max by (" + by + ") (" + std::string(metric) + ")"});
    }
  }

  Result<GpuReading> Read() override {
    std::vector<PromSample> samples;
    for (const auto& [metric, query] : queries_) {
      if (cancelled_.load()) return Error{"cancelled"};
      Result<std::vector<PromSample>> answer = Query(query);
      if (!answer.ok()) {
        return Error{origin_ + query_path_ + " " + metric + ": " + answer.error().message};
      }
      for (PromSample& sample : answer.value()) {
        sample.name = metric;  // the aggregation dropped __name__
        samples.push_back(std::move(sample));
      }
    }
    return GpuReadingFromSamples(samples, options_.labels);
  }

  // httplib's stop() shuts the socket of a request in flight; the flag stops the queries
  // that have not started (stop() between two requests would only close an idle connection).
  void Cancel() override {
    cancelled_.store(true);
    client_.stop();
  }

 private:
  struct MetricQuery {
    std::string metric;
    std::string promql;
  };

  Result<std::vector<PromSample>> Query(const std::string& promql) {
    httplib::Params params{{"query", promql},
                           {"timeout", std::to_string(options_.read_timeout.count()) + "s"}};
    std::string body;
    bool too_large = false;
    httplib::Result res = client_.Get(query_path_, params, {{"Accept", "application/json"}},
                                      [&](const char* data, size_t length) {
                                        too_large = body.size() + length > kMaxAnswerBytes;
                                        if (!too_large) body.append(data, length);
                                        return !too_large;
                                      });
    if (too_large) return Error{"answer larger than 64 MiB"};
    if (!res) return Error{TransportError(res.error())};
    Result<std::vector<PromSample>> answer = ParseInstantQueryAnswer(body);
    if (res->status != 200) {
      // Prometheus explains 400/422/503 in a JSON error body; anything else (a proxy's page) is
      // quoted briefly.
      size_t first = body.find_first_not_of(" \t\r\n");
      bool json = first != std::string::npos && body[first] == '{';
      std::string why = json && !answer.ok() ? answer.error().message : body.substr(0, 200);
      return Error{"HTTP " + std::to_string(res->status) + ": " + why};
    }
    return answer;
  }

  std::string origin_;
  std::string query_path_;
  PrometheusReaderOptions options_;
  httplib::Client client_;
  std::vector<MetricQuery> queries_;
  std::atomic<bool> cancelled_{false};
};

class DcgmFileReader final : public GpuMetricsReader {
 public:
  DcgmFileReader(std::string path, GpuReadOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}

  Result<GpuReading> Read() override {
    struct stat info {};
    if (::stat(path_.c_str(), &info) != 0) {
      return Error{path_ + ": " + std::strerror(errno)};
    }
    FileVersion version{info.st_ino, info.st_size, info.st_mtim.tv_sec, info.st_mtim.tv_nsec};
    if (cached_ && version == cached_version_) return *cached_;
    Result<std::string> text = ReadWholeFile(path_);
    if (!text.ok()) return text.error();
    cached_ = GpuReadingFromExposition(text.value(), options_);
    cached_version_ = version;
    return *cached_;
  }

  void Cancel() override {}  // a local file read is short

 private:
  struct FileVersion {
    ino_t inode = 0;  // a file replaced by rename, as ConfigMap updates do
    off_t size = 0;
    time_t mtime_s = 0;
    long mtime_ns = 0;  // NOLINT(runtime/int): timespec's type
    bool operator==(const FileVersion&) const = default;
  };

  std::string path_;
  GpuReadOptions options_;
  std::optional<GpuReading> cached_;
  FileVersion cached_version_;
};

}  // namespace

Result<std::unique_ptr<GpuMetricsReader>> MakePrometheusReader(std::string_view url,
                                                               PrometheusReaderOptions options) {
  auto bad = [&](std::string_view why) {
    return Error{"--prometheus " + std::string(url) + ": " + std::string(why)};
  };
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return bad("not a URL (http://host:port)");
  std::string_view scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return bad("the scheme must be http or https");
  std::string_view rest = url.substr(scheme_end + 3);
  size_t path_start = rest.find('/');
  std::string_view authority = rest.substr(0, path_start);
  std::string_view path =
      path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (authority.empty() || authority.front() == ':') return bad("no host");
  if (path.find_first_of("?#") != std::string_view::npos) return bad("no query or fragment");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (options.labels.node_labels.empty()) return bad("no node label to read");
  const std::vector<std::string>& labels = options.labels.node_labels;
  auto invalid = std::find_if_not(labels.begin(), labels.end(), IsLabelName);
  if (invalid != labels.end()) return bad("node label \"" + *invalid + "\" is not a label name");
  std::unique_ptr<GpuMetricsReader> reader = std::make_unique<PrometheusReader>(
      std::string(scheme) + "://" + std::string(authority), std::string(path), std::move(options));
  return reader;
}

std::unique_ptr<GpuMetricsReader> MakeDcgmFileReader(std::string path, GpuReadOptions options) {
  return std::make_unique<DcgmFileReader>(std::move(path), std::move(options));
}

GpuMetricsPoller::GpuMetricsPoller(std::unique_ptr<GpuMetricsReader> reader, const Clock& clock,
                                   Logger& log, GpuMetricsPollerOptions options)
    : reader_(std::move(reader)),
      clock_(clock),
      log_(log),
      options_(std::move(options)),
      history_(options_.window),
      latest_(std::make_shared<const ClusterGpuMetrics>()) {}

GpuMetricsPoller::~GpuMetricsPoller() { Stop(); }

void GpuMetricsPoller::Start() {
  if (thread_.joinable()) return;  // started already
  thread_ = std::thread([this] { Run(); });
}

void GpuMetricsPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  reader_->Cancel();
  if (thread_.joinable()) thread_.join();
}

void GpuMetricsPoller::Run() {
  for (;;) {
    PollOnce();
    std::unique_lock<std::mutex> lock(mu_);
    // A relative wait: the condition variable's own steady clock, so a test's manual Clock
    // (which only stamps readings) cannot turn this into a busy loop or a hang.
    if (wake_.wait_for(lock, options_.interval, [this] { return stopping_; })) return;
  }
}

bool GpuMetricsPoller::PollOnce() {
  std::optional<Result<GpuReading>> reading;
  try {
    reading.emplace(reader_->Read());
  } catch (const std::exception& e) {  // a third-party throw stops here, as a failed read
    reading.emplace(Error{std::string("read threw: ") + e.what()});
  }
  if (!reading->ok()) {
    RecordFailure(reading->error().message);
    return false;
  }
  MetricsTime now = clock_.Now();
  history_.Add(reading->value(), now);
  auto published = std::make_shared<const ClusterGpuMetrics>(history_.Publish());
  latest_.store(published);
  if (options_.on_publish) options_.on_publish(std::move(published));
  RecordSuccess(reading->value(), now);
  return true;
}

void GpuMetricsPoller::RecordSuccess(const GpuReading& reading, MetricsTime at) {
  std::lock_guard<std::mutex> lock(mu_);
  ++status_.reads_ok;
  if (health_ != Health::kUp) {
    std::string devices = std::to_string(reading.gpus.size());
    std::string failures = std::to_string(status_.consecutive_failures);
    log_.Info(health_ == Health::kUnknown ? "gpu metrics source up" : "gpu metrics source back",
              {{"source", options_.source}, {"devices", devices}, {"failed_reads", failures}});
    health_ = Health::kUp;
  }
  status_.consecutive_failures = 0;
  status_.last_error.clear();
  status_.last_good_at = at;
  status_.has_metrics = true;
  // Logged when the counts change, not per poll; a count back to zero needs no line.
  if (reading.unattributed_series != logged_unattributed_ && reading.unattributed_series > 0) {
    log_.Warn(
        "gpu metrics: series without a node label or gpu index dropped",
        {{"source", options_.source}, {"series", std::to_string(reading.unattributed_series)}});
  }
  if (reading.skipped_lines != logged_skipped_ && reading.skipped_lines > 0) {
    log_.Warn("gpu metrics: lines that are not samples skipped",
              {{"source", options_.source},
               {"lines", std::to_string(reading.skipped_lines)},
               {"first_line", std::to_string(reading.first_skipped_line)}});
  }
  logged_unattributed_ = reading.unattributed_series;
  logged_skipped_ = reading.skipped_lines;
}

void GpuMetricsPoller::RecordFailure(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  ++status_.reads_failed;
  ++status_.consecutive_failures;
  status_.last_error = error;
  if (stopping_) return;  // a read cancelled by Stop is not news
  if (health_ != Health::kFailing) {
    log_.Warn(status_.has_metrics ? "gpu metrics source failing; keeping the last good metrics"
                                  : "gpu metrics source failing; no metrics yet",
              {{"source", options_.source}, {"error", error}});
    health_ = Health::kFailing;
  }
}

std::shared_ptr<const ClusterGpuMetrics> GpuMetricsPoller::Latest() const { return latest_.load(); }

GpuMetricsPollerStatus GpuMetricsPoller::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::map<std::string, std::string, std::less<>> PodNodesOf(const nlohmann::json& cluster_list) {
  std::map<std::string, std::string, std::less<>> out;
  auto items = cluster_list.is_object() ? cluster_list.find("items") : cluster_list.end();
  if (items == cluster_list.end() || !items->is_array()) return out;
  for (const nlohmann::json& item : *items) {
    if (StringAt(item, {"kind"}) != "Pod") continue;
    std::string name = StringAt(item, {"metadata", "name"});
    std::string node = StringAt(item, {"spec", "nodeName"});
    if (!name.empty() && !node.empty()) out.emplace(name, node);
  }
  return out;
}

Result<std::unique_ptr<GpuMetricsReader>> MakeGpuMetricsReader(const std::string& prometheus_url,
                                                               const std::string& dcgm_file) {
  if (!prometheus_url.empty()) return MakePrometheusReader(prometheus_url);
  return MakeDcgmFileReader(dcgm_file);
}

}  // namespace gpuadmit
