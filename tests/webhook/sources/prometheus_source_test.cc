// GpuMetricsPoller over fake readers (degraded modes, Start/Stop), the --dcgm-file reader over
// a temp file, and the Prometheus reader's URL checks and HTTP handling against a loopback
// stand-in on port 0. The test against a real Prometheus is prometheus_real_test.cc.
#include "webhook/sources/prometheus_source.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using std::chrono::seconds;

class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return now_; }
  void Advance(std::chrono::steady_clock::duration d) { now_ += d; }

 private:
  std::chrono::steady_clock::time_point now_{};
};

// Answers queued results in order; once they run out, repeats the last.
class ScriptedReader final : public GpuMetricsReader {
 public:
  explicit ScriptedReader(std::deque<Result<GpuReading>> script) : script_(std::move(script)) {}
  Result<GpuReading> Read() override {
    ++reads;
    if (script_.size() > 1) {
      Result<GpuReading> next = std::move(script_.front());
      script_.pop_front();
      return next;
    }
    return script_.front();
  }
  void Cancel() override {}
  std::atomic<int> reads{0};

 private:
  std::deque<Result<GpuReading>> script_;
};

GpuReading OneT4(double util) {
  GpuSample gpu;
  gpu.node = "node-a";
  gpu.gpu = 0;
  gpu.model_name = "Tesla T4";
  gpu.utilization_percent = util;
  return GpuReading{.gpus = {gpu}};
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GpuMetricsPoller, LatestIsEmptyNotNullBeforeTheFirstRead) {
  ManualClock clock;
  Logger log(LogLevel::kError);
  GpuMetricsPoller poller(
      std::make_unique<ScriptedReader>(std::deque<Result<GpuReading>>{OneT4(1)}), clock, log);
  ASSERT_NE(poller.Latest(), nullptr);
  EXPECT_TRUE(poller.Latest()->nodes().empty());
}

TEST(GpuMetricsPoller, FailedReadsKeepTheLastGoodMetricsCountAndLogOncePerStateChange) {
  ManualClock clock;
  Logger log(LogLevel::kInfo);
  std::deque<Result<GpuReading>> script = {OneT4(10), Error{"connection refused"},
                                           Error{"connection refused"}, Error{"timeout"},
                                           OneT4(40)};
  GpuMetricsPollerOptions options;
  options.source = "http://prom:9090";
  GpuMetricsPoller poller(std::make_unique<ScriptedReader>(std::move(script)), clock, log, options);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(poller.PollOnce());
  std::shared_ptr<const ClusterGpuMetrics> good = poller.Latest();
  for (int i = 0; i < 3; ++i) {
    clock.Advance(seconds(15));
    EXPECT_FALSE(poller.PollOnce());
    EXPECT_EQ(poller.Latest(), good);  // the same published object, untouched
  }
  GpuMetricsPollerStatus failing = poller.status();
  EXPECT_EQ(failing, (GpuMetricsPollerStatus{.reads_ok = 1,
                                             .reads_failed = 3,
                                             .consecutive_failures = 3,
                                             .last_error = "timeout",
                                             .last_good_at = MetricsTime{},
                                             .has_metrics = true}));
  clock.Advance(seconds(15));
  EXPECT_TRUE(poller.PollOnce());
  std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count(logged, "\n"), 3u) << logged;  // up, failing, back
  EXPECT_EQ(Count(logged, "gpu metrics source up"), 1u);
  EXPECT_EQ(Count(logged, "failing; keeping the last good metrics"), 1u);
  EXPECT_EQ(Count(logged, "error=\"connection refused\""), 1u);
  EXPECT_EQ(Count(logged, "gpu metrics source back"), 1u);
  EXPECT_EQ(Count(logged, "failed_reads=3"), 1u);

  const GpuMetrics& gpu = poller.Latest()->FindNode("node-a")->gpus.at(0);
  EXPECT_EQ(gpu.latest.utilization_percent, 40.0);
  EXPECT_EQ(gpu.latest_at, MetricsTime{} + seconds(60));
  // The window spans both good reads, 60 s apart.
  EXPECT_EQ(gpu.utilization_percent, (WindowStats{.min = 10, .max = 40, .mean = 25, .count = 2}));
  EXPECT_EQ(poller.status().consecutive_failures, 0u);
  EXPECT_EQ(poller.status().last_error, "");
}

TEST(GpuMetricsPoller, StartReadsAtOnceAndStopEndsTheWaitPromptly) {
  ManualClock clock;
  Logger log(LogLevel::kError);
  auto reader = std::make_unique<ScriptedReader>(std::deque<Result<GpuReading>>{OneT4(5)});
  ScriptedReader* script = reader.get();
  GpuMetricsPollerOptions options;
  options.interval = std::chrono::hours(1);
  GpuMetricsPoller poller(std::move(reader), clock, log, options);
  poller.Start();
  // Bounded wait for the first read's publish, not a sleep on luck: 10 s is a hang, not a race.
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (poller.status().reads_ok == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(poller.status().reads_ok, 1u);
  auto before = std::chrono::steady_clock::now();
  poller.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(1));
  EXPECT_EQ(script->reads.load(), 1);
  poller.Stop();  // idempotent
}

// Blocks in Read until cancelled, like an HTTP read against a Prometheus that never answers.
class HangingReader final : public GpuMetricsReader {
 public:
  Result<GpuReading> Read() override {
    std::unique_lock<std::mutex> lock(mu_);
    entered.set_value();
    cv_.wait(lock, [this] { return cancelled_; });
    return Error{"cancelled"};
  }
  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  std::promise<void> entered;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

TEST(GpuMetricsPoller, StopCancelsAReadInProgressAndLogsNothingForIt) {
  ManualClock clock;
  Logger log(LogLevel::kInfo);
  auto reader = std::make_unique<HangingReader>();
  std::future<void> entered = reader->entered.get_future();
  GpuMetricsPoller poller(std::move(reader), clock, log);
  ::testing::internal::CaptureStderr();
  poller.Start();
  ASSERT_EQ(entered.wait_for(seconds(10)), std::future_status::ready);
  auto before = std::chrono::steady_clock::now();
  poller.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(1));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(poller.status().reads_failed, 1u);
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "gpuadmit-XXXXXX").string();
    path_ = ::mkdtemp(templ.data()) != nullptr ? templ : "";
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(GpuMetricsPoller, EachGoodReadIsHandedToOnPublishAsLatestHasIt) {
  ManualClock clock;
  Logger log(LogLevel::kError);
  std::vector<std::shared_ptr<const ClusterGpuMetrics>> published;
  GpuMetricsPollerOptions options;
  options.on_publish = [&](std::shared_ptr<const ClusterGpuMetrics> m) {
    published.push_back(std::move(m));
  };
  std::deque<Result<GpuReading>> script = {OneT4(10), Error{"down"}, OneT4(30)};
  GpuMetricsPoller poller(std::make_unique<ScriptedReader>(std::move(script)), clock, log, options);
  EXPECT_TRUE(poller.PollOnce());
  EXPECT_FALSE(poller.PollOnce());
  EXPECT_TRUE(poller.PollOnce());
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published.back(), poller.Latest());
  EXPECT_EQ(published[0]->FindNode("node-a")->gpus.at(0).latest.utilization_percent, 10.0);
}

// The recorded T4 exporter names itself, not its node; its pod in the cluster list names the node.
TEST(PodNodesOf, MapsTheExporterPodsHostLabelToItsNode) {
  nlohmann::json cluster = testing::ListOf(
      {testing::GpuNode("gpu-t4", 2),
       {{"kind", "Pod"},
        {"metadata", {{"name", "nvidia-dcgm-exporter-s228n"}, {"namespace", "gpu-operator"}}},
        {"spec", {{"nodeName", "gpu-t4"}}}},
       {{"kind", "Pod"}, {"metadata", {{"name", "pending"}}}, {"spec", nlohmann::json::object()}},
       {{"kind", "Pod"}, {"metadata", {{"name", 7}}}, {"spec", {{"nodeName", "x"}}}}});
  auto hosts = PodNodesOf(cluster);
  EXPECT_EQ(
      hosts,
      (std::map<std::string, std::string, std::less<>>{{"nvidia-dcgm-exporter-s228n", "gpu-t4"}}));
  ClusterGpuMetrics renamed = RenameNodes(
      testing::MetricsOf(
          testing::ReadSourceFile("tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom")),
      hosts);
  ASSERT_NE(renamed.FindNode("gpu-t4"), nullptr);
  EXPECT_EQ(renamed.FindNode("gpu-t4")->gpus.size(), 2u);
  EXPECT_TRUE(PodNodesOf(nlohmann::json::array()).empty());
}

TEST(DcgmFileReader, ReadsTheFileAndReadsItAgainWhenReplaced) {
  TempDir dir;
  std::string path = dir.File("dcgm.prom");
  std::string t4 =
      testing::ReadSourceFile("tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom");
  WriteFile(path, t4);
  std::unique_ptr<GpuMetricsReader> reader = MakeDcgmFileReader(path);
  Result<GpuReading> first = reader->Read();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first.value(), GpuReadingFromExposition(t4));
  EXPECT_EQ(reader->Read().value(), first.value());  // unchanged: the cached reading

  // Replaced the way a ConfigMap volume does it: a new file renamed over the old one.
  std::string mig =
      testing::ReadSourceFile("tests/fixtures/dcgm/a100-mig-idle-1g.5gb-allocated.ini");
  WriteFile(dir.File("next"), mig);
  std::filesystem::rename(dir.File("next"), path);
  Result<GpuReading> second = reader->Read();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value(), GpuReadingFromExposition(mig));
  EXPECT_EQ(second.value().skipped_lines, 1u);

  std::filesystem::remove(path);
  Result<GpuReading> gone = reader->Read();
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().message, path + ": No such file or directory");
}

TEST(MakePrometheusReader, RefusesWhatIsNotAnHttpOrHttpsUrlWithAHost) {
  EXPECT_EQ(MakePrometheusReader("prometheus:9090").error().message,
            "--prometheus prometheus:9090: not a URL (http://host:port)");
  EXPECT_EQ(MakePrometheusReader("ftp://prometheus").error().message,
            "--prometheus ftp://prometheus: the scheme must be http or https");
  EXPECT_FALSE(MakePrometheusReader("http://").ok());
  EXPECT_FALSE(MakePrometheusReader("http://:9090").ok());
  EXPECT_FALSE(MakePrometheusReader("http://prom:9090/api?x=1").ok());
  PrometheusReaderOptions bad_label;
  bad_label.labels.node_labels = {"no-dash"};
  EXPECT_FALSE(MakePrometheusReader("http://prom", bad_label).ok());
  EXPECT_TRUE(MakePrometheusReader("https://thanos.example:9091/prometheus/").ok());
  EXPECT_TRUE(MakePrometheusReader("http://[::1]:9090").ok());
}

// A loopback stand-in for Prometheus' query endpoint that records what it was asked.
class QueryEndpoint {
 public:
  explicit QueryEndpoint(httplib::Server::Handler handler) {
    server_.Get("/prefix/api/v1/query",
                [this, handler](const httplib::Request& req, httplib::Response& res) {
                  {
                    std::lock_guard<std::mutex> lock(mu_);
                    queries_.push_back(req.get_param_value("query") +
                                       " timeout=" + req.get_param_value("timeout"));
                  }
                  handler(req, res);
                });
    server_.set_tcp_nodelay(true);
    port_ = server_.bind_to_any_port("127.0.0.1");
    // bind_to_any_port also listens: connections queue until listen_after_bind accepts them.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~QueryEndpoint() {
    server_.stop();
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/prefix"; }
  std::vector<std::string> queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> queries_;
};

TEST(PrometheusReader, SendsOneAggregatedInstantQueryPerDcgmMetric) {
  QueryEndpoint prometheus([](const httplib::Request& req, httplib::Response& res) {
    bool util = req.get_param_value("query").find("(DCGM_FI_DEV_GPU_UTIL)") != std::string::npos;
    res.set_content(
        std::string(R"({"status":"success","data":{"resultType":"vector","result":[)") +
            (util ? R"({"metric":{"Hostname":"n","gpu":"0"},"value":[1.5,"42"]})" : "") + "]}}",
        "application/json");
  });
  auto reader = MakePrometheusReader(prometheus.Url());
  ASSERT_TRUE(reader.ok());
  Result<GpuReading> reading = reader.value()->Read();
  ASSERT_TRUE(reading.ok()) << reading.error().message;
  GpuSample expected;
  expected.node = "n";
  expected.gpu = 0;
  expected.utilization_percent = 42;
  EXPECT_EQ(reading.value(), (GpuReading{.gpus = {expected}}));
  const std::string by = "max by (Hostname,hostname,gpu,UUID,modelName,GPU_I_PROFILE,GPU_I_ID) ";
  EXPECT_EQ(
      prometheus.queries(),
      (std::vector<std::string>{
          by + "(DCGM_FI_DEV_GPU_UTIL) timeout=5s",
          by + "(DCGM_FI_PROF_GR_ENGINE_ACTIVE) timeout=5s",
          by + "(DCGM_FI_DEV_FB_USED) timeout=5s", by + "(DCGM_FI_DEV_FB_FREE) timeout=5s",
          by + "(DCGM_FI_DEV_GPU_TEMP) timeout=5s", by + "(DCGM_FI_DEV_POWER_USAGE) timeout=5s"}));
}

TEST(PrometheusReader, AnErrorAnswerFailsTheReadWithPrometheusReason) {
  QueryEndpoint prometheus([](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"status":"error","errorType":"unavailable","error":"tsdb not ready"})",
                    "application/json");
  });
  Result<GpuReading> reading = MakePrometheusReader(prometheus.Url()).value()->Read();
  ASSERT_FALSE(reading.ok());
  EXPECT_EQ(reading.error().message,
            prometheus.Url() +
                "/api/v1/query DCGM_FI_DEV_GPU_UTIL: HTTP 503: prometheus query "
                "answer: status error: unavailable: tsdb not ready");
}

TEST(PrometheusReader, CancelEndsAReadStuckOnASlowPrometheus) {
  std::promise<void> asked;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  QueryEndpoint prometheus([&](const httplib::Request&, httplib::Response& res) {
    asked.set_value();  // the read is stuck on its first query: one request only
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    res.set_content("{}", "application/json");
  });
  std::unique_ptr<GpuMetricsReader> reader =
      std::move(MakePrometheusReader(prometheus.Url())).value();
  std::optional<Result<GpuReading>> reading;
  std::thread polling([&] { reading.emplace(reader->Read()); });
  ASSERT_EQ(asked.get_future().wait_for(seconds(10)), std::future_status::ready);
  auto before = std::chrono::steady_clock::now();
  reader->Cancel();
  polling.join();
  // Well under the 5 s read timeout that would end it otherwise.
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(1));
  ASSERT_TRUE(reading.has_value());
  EXPECT_FALSE(reading->ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST(PrometheusReader, NobodyListeningFailsTheReadWithoutThrowing) {
  // A port that was free a moment ago: bound, learnt, closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  auto reader = MakePrometheusReader("http://127.0.0.1:" + std::to_string(port));
  Result<GpuReading> reading = reader.value()->Read();
  ASSERT_FALSE(reading.ok());
  EXPECT_NE(reading.error().message.find("DCGM_FI_DEV_GPU_UTIL: "), std::string::npos)
      << reading.error().message;
}

}  // namespace
}  // namespace gpuadmit
