// The Prometheus reader against a real Prometheus (Debian's `prometheus` package), started by
// the test on 127.0.0.1 on a free port with its own storage in a temp dir, backfilled with every
// recorded DCGM fixture through `promtool tsdb create-blocks-from openmetrics`. Asserts per-node
// utilisation and memory as read through our client, then that a stopped Prometheus keeps the
// last good metrics.
//
// Its own executable so that ctest can report it skipped: exit code 77 (SKIP_RETURN_CODE) when
// /usr/bin/prometheus or /usr/bin/promtool is missing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "tests/fakes/test_cluster.h"
#include "webhook/sources/prometheus_source.h"

extern char** environ;

namespace gpuadmit {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kPromtool[] = "/usr/bin/promtool";

const char* const kFixtures[] = {
    "a100-mig-4-active-workloads.ini",
    "a100-mig-active-2x1g.5gb-1x2g.10gb.ini",
    "a100-mig-disabled-empty.ini",
    "a100-mig-enabled-empty.ini",
    "a100-mig-idle-1g.5gb-allocated.ini",
    "a100-whole-gpu-and-mig-1g.5gb-excerpt.prom",
    "tesla-t4-x2-one-workload-pod-labels.prom",
};

class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return now_; }
  void Advance(std::chrono::steady_clock::duration d) { now_ += d; }

 private:
  std::chrono::steady_clock::time_point now_{};
};

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A child process with stdout and stderr in `log_path`; killed and reaped when destroyed.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log_path) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() { Stop(); }

  bool started() const { return pid_ > 0; }
  // Exit status once exited, -1 while running.
  int Poll() {
    if (pid_ <= 0) return exit_status_;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return -1;
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }
  int Wait() {
    for (;;) {
      int status = Poll();
      if (status >= 0) return status;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // SIGTERM, then SIGKILL if it has not exited within 5 s.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + seconds(5);
    while (Poll() < 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }

 private:
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The fixtures as one OpenMetrics text, every sample stamped `at_s`: the DCGM_FI_ lines only
// (that drops the publishers' titles and dashes), one family per metric name, each series once
// (a100-mig-disabled-empty.ini repeats its dump), and the `# EOF` that promtool requires.
// Plain text work, independent of the parser under test.
std::string FixturesAsOpenMetrics(int64_t at_s) {
  std::map<std::string, std::map<std::string, std::string>> families;
  for (const char* fixture : kFixtures) {
    std::istringstream lines(
        testing::ReadSourceFile(std::string("tests/fixtures/dcgm/") + fixture));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("DCGM_FI_", 0) != 0) continue;
      size_t space = line.rfind(' ');
      std::string series = line.substr(0, space);
      families[series.substr(0, series.find('{'))][series] = line.substr(space + 1);
    }
  }
  std::string text;
  for (const auto& [name, series] : families) {
    text += "# TYPE " + name + " gauge\n";
    for (const auto& [labels, value] : series) {
      text += labels + " " + value + " " + std::to_string(at_s) + "\n";
    }
  }
  return text + "# EOF\n";
}

class RealPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "gpuadmit-prometheus-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    // 30 s ago: inside the 5 min lookback of an instant query at Prometheus' now.
    int64_t at_s =
        std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count() -
        30;
    std::ofstream(dir_ + "/dcgm.om") << FixturesAsOpenMetrics(at_s);
    std::ofstream(dir_ + "/prometheus.yml") << "global:\n  scrape_interval: 1m\n";
    Child promtool(
        {kPromtool, "tsdb", "create-blocks-from", "openmetrics", dir_ + "/dcgm.om", dir_ + "/data"},
        dir_ + "/promtool.log");
    ASSERT_TRUE(promtool.started());
    ASSERT_EQ(promtool.Wait(), 0) << ReadText(dir_ + "/promtool.log");
    // A free port can be taken between the probe and Prometheus' bind: try a few.
    for (int attempt = 0; attempt < 3 && !ready_; ++attempt) StartPrometheus();
    ASSERT_TRUE(ready_) << ReadText(dir_ + "/prometheus.log");
  }

  void TearDown() override {
    prometheus_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void StartPrometheus() {
    port_ = FreeLoopbackPort();
    prometheus_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir_ + "/data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--log.level=warn"},
        dir_ + "/prometheus.log");
    if (!prometheus_->started()) return;
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(seconds(1));
    // Bounded: Prometheus is ready in well under a second on an empty config.
    auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < deadline && prometheus_->Poll() < 0) {
      httplib::Result res = client.Get("/-/ready");
      if (res && res->status == 200) {
        ready_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string dir_;
  int port_ = 0;
  bool ready_ = false;
  std::unique_ptr<Child> prometheus_;
};

const GpuMetrics& Device(const ClusterGpuMetrics& metrics, const std::string& node, int gpu,
                         int mig_instance) {
  const NodeGpuMetrics* n = metrics.FindNode(node);
  if (n != nullptr) {
    for (const GpuMetrics& d : n->gpus) {
      if (d.latest.gpu == gpu && d.latest.mig_instance == mig_instance) return d;
    }
  }
  ADD_FAILURE() << "no device " << node << "/" << gpu << "/" << mig_instance;
  static const GpuMetrics kNone;
  return kNone;
}

TEST_F(RealPrometheusTest, ReadsEveryRecordedFixturePerNodeUtilisationAndMemory) {
  ManualClock clock;
  Logger log(LogLevel::kError);
  auto reader = MakePrometheusReader(Url());
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  GpuMetricsPollerOptions options;
  options.source = Url();
  GpuMetricsPoller poller(std::move(reader).value(), clock, log, options);
  ASSERT_TRUE(poller.PollOnce()) << poller.status().last_error;
  std::shared_ptr<const ClusterGpuMetrics> metrics = poller.Latest();

  // Whole values: what went through Prometheus equals what the text parser reads from the files.
  std::vector<PromSample> all;
  for (const char* fixture : kFixtures) {
    ExpositionSamples text =
        ParseExposition(testing::ReadSourceFile(std::string("tests/fixtures/dcgm/") + fixture));
    all.insert(all.end(), text.samples.begin(), text.samples.end());
  }
  std::vector<GpuSample> through_prometheus;
  for (const NodeGpuMetrics& node : metrics->nodes()) {
    for (const GpuMetrics& gpu : node.gpus) through_prometheus.push_back(gpu.latest);
  }
  EXPECT_EQ(through_prometheus, GpuReadingFromSamples(all).gpus);
  EXPECT_EQ(metrics->nodes().size(), 7u);
  EXPECT_EQ(metrics->unattributed_series(), 0u);

  // And per node, the numbers placement uses, checked against the fixture text by hand.
  const GpuSample& t4_0 = Device(*metrics, "nvidia-dcgm-exporter-s228n", 0, -1).latest;
  EXPECT_EQ(t4_0.utilization_percent, 0.0);
  EXPECT_EQ(t4_0.fb_used_mib, 128.0);
  EXPECT_EQ(t4_0.fb_free_mib, 14831.0);
  EXPECT_EQ(t4_0.model_name, "Tesla T4");
  EXPECT_EQ(Device(*metrics, "nvidia-dcgm-exporter-s228n", 1, -1).latest.fb_used_mib, 5.0);
  EXPECT_EQ(IdleGpuCount(metrics->FindNode("nvidia-dcgm-exporter-s228n"), 2), 2);

  const GpuSample& busy = Device(*metrics, "nvidia-dcgm-exporter-tl46n", 0, 8).latest;
  EXPECT_EQ(busy.mig_profile, "1g.5gb");
  EXPECT_EQ(busy.utilization_percent, 0.408493 * 100.0);
  EXPECT_EQ(busy.fb_used_mib, 4384.0);
  EXPECT_EQ(busy.fb_free_mib, 480.0);
  EXPECT_EQ(IdleGpuCount(metrics->FindNode("nvidia-dcgm-exporter-tl46n"), 3, {}, "1g.5gb"), 2);

  EXPECT_EQ(Device(*metrics, "nvidia-dcgm-exporter-q28k4", 0, 9).latest.utilization_percent,
            0.999917 * 100.0);
  EXPECT_EQ(Device(*metrics, "nvidia-dcgm-exporter-drqwq", 0, -1).latest.fb_free_mib, 40384.0);
  EXPECT_EQ(Device(*metrics, "nvidia-dcgm-exporter-wwvv9", 0, -1).latest.fb_used_mib, std::nullopt);
  EXPECT_EQ(Device(*metrics, "nvidia-dcgm-exporter-m48cc", 0, 8).latest.fb_used_mib, 6.0);
  const GpuSample& whole = Device(*metrics, "ub20-a100-k8s", 0, -1).latest;
  EXPECT_EQ(whole.utilization_percent, 0.995630 * 100.0);
  EXPECT_EQ(whole.fb_used_mib, 4845.0);
  EXPECT_EQ(Device(*metrics, "ub20-a100-k8s", 0, 13).latest.utilization_percent, 0.995687 * 100.0);

  // A second poll 15 s later joins the window; then Prometheus goes away.
  clock.Advance(seconds(15));
  ASSERT_TRUE(poller.PollOnce()) << poller.status().last_error;
  EXPECT_EQ(Device(*poller.Latest(), "nvidia-dcgm-exporter-tl46n", 0, 8).fb_used_mib,
            (WindowStats{.min = 4384, .max = 4384, .mean = 4384, .count = 2}));
  std::shared_ptr<const ClusterGpuMetrics> last_good = poller.Latest();
  prometheus_->Stop();
  clock.Advance(seconds(15));
  EXPECT_FALSE(poller.PollOnce());
  EXPECT_EQ(poller.Latest(), last_good);
  EXPECT_EQ(poller.status().consecutive_failures, 1u);
  EXPECT_NE(poller.status().last_error.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
}

}  // namespace
}  // namespace gpuadmit

int main(int argc, char** argv) {
  if (::access(gpuadmit::kPrometheus, X_OK) != 0 || ::access(gpuadmit::kPromtool, X_OK) != 0) {
    std::printf("SKIP: %s or %s is missing; install Debian's prometheus package to run this test\n",
                gpuadmit::kPrometheus, gpuadmit::kPromtool);
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
