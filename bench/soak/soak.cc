// gpuadmit_soak: the soak. The real `gpuadmit serve` binary against a fake Kubernetes API
// (tests/fakes) whose pod watch delivers an event every millisecond, loaded over TLS keep-alive at
// half of the throughput measured first with the same clients; the server's RSS and open file
// descriptors are sampled from /proc throughout. Passes (exit 0) with zero failed requests, RSS
// growth under 5% from the end of the warm-up to the end, no descriptor growth, and exit 0 on
// SIGTERM.
//
//   build/bench/gpuadmit_soak [--duration 600] [--warmup 60] [--rate R] [--connections 16]
//                             [--churn-us 1000] [--gpuadmit build/gpuadmit]
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/tls_files.h"

extern char** environ;

namespace gpuadmit::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const std::string kPolicy = std::string(GPUADMIT_SOURCE_DIR) + "/manifests/examples/policy.yaml";

struct Options {
  int duration_s = 600;
  int warmup_s = 60;
  double rate = 0;  // requests/s in total; 0: half of the measured maximum
  int connections = 16;
  int churn_us = 1000;
  int sample_s = 10;
  std::string gpuadmit = "build/gpuadmit";
};

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") return false;
    if (!(v = next())) return false;
    if (a == "--duration")
      o.duration_s = std::atoi(v);
    else if (a == "--warmup")
      o.warmup_s = std::atoi(v);
    else if (a == "--rate")
      o.rate = std::atof(v);
    else if (a == "--connections")
      o.connections = std::atoi(v);
    else if (a == "--churn-us")
      o.churn_us = std::atoi(v);
    else if (a == "--sample")
      o.sample_s = std::atoi(v);
    else if (a == "--gpuadmit")
      o.gpuadmit = v;
    else
      return false;
  }
  return o.duration_s > o.warmup_s && o.connections > 0 && o.churn_us > 0 && o.sample_s > 0;
}

struct Sample {
  double t = 0;  // seconds since the soak started
  long rss_kib = 0;
  int fds = 0;
};

Sample Probe(pid_t pid, double t) {
  Sample s{t, 0, 0};
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::atol(line.c_str() + 6);
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++s.fds;
  }
  return s;
}

// A port free now on 127.0.0.1 (the kernel's pick for port 0, released again).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

// The pod whose watch events churn the inventory: bound to gpu-small, one 1g.10gb, flipping
// between Running (uses the device) and Succeeded (frees it) with every event.
json ChurnPod(uint64_t resource_version, bool running) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "churn"},
            {"namespace", "default"},
            {"uid", "0c0c0c0c-soak-churn"},
            {"resourceVersion", std::to_string(resource_version)}}},
          {"spec",
           {{"nodeName", "gpu-small"},
            {"containers",
             {{{"name", "main"},
               {"image", "busybox"},
               {"resources",
                {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}},
                 {"requests", {{"nvidia.com/mig-1g.10gb", "1"}}}}}}}}}},
          {"status", {{"phase", running ? "Running" : "Succeeded"}}}};
}

struct Load {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> failed{0};
  std::mutex mu;
  std::vector<double> latencies_ms;  // guarded by mu, merged per thread at the end
  std::string first_failure;
};

// One kept-alive connection. `period`: the time between sends (paced, open loop: a late send
// does not push the later ones back); zero: closed loop, as fast as answers come.
void Client(int port, const std::string& body, Clock::duration period, Load& load) {
  httplib::SSLClient c("127.0.0.1", port);
  c.enable_server_certificate_verification(false);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  c.set_read_timeout(10, 0);
  std::vector<double> mine;
  Clock::time_point next = Clock::now();
  while (!load.stop.load(std::memory_order_relaxed)) {
    if (period.count() > 0) {
      next += period;
      std::this_thread::sleep_until(next);
    }
    Clock::time_point start = Clock::now();
    auto res = c.Post("/mutate?timeout=10s", body, "application/json");
    mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    load.sent.fetch_add(1, std::memory_order_relaxed);
    bool ok = res && res->status == 200 && res->body.find("\"allowed\":true") != std::string::npos;
    if (!ok) {
      load.failed.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(load.mu);
      if (load.first_failure.empty()) {
        load.first_failure =
            res ? "status " + std::to_string(res->status) + ": " + res->body.substr(0, 200)
                : "transport error " + httplib::to_string(res.error());
      }
    }
  }
  std::lock_guard<std::mutex> lock(load.mu);
  load.latencies_ms.insert(load.latencies_ms.end(), mine.begin(), mine.end());
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

int Run(const Options& o) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("gpuadmit-soak-" + std::to_string(getpid()));
  fs::create_directories(dir);
  testing::TlsFiles serving;  // gpuadmit's certificate
  testing::FakeKubeApiServer api("soak-token");
  std::vector<json> nodes, pods;
  for (const json& item : testing::DemoCluster()["items"]) {
    (item["kind"] == "Node" ? nodes : pods).push_back(item);
  }
  uint64_t resource_version = 1000;
  api.SetObjects("nodes", nodes, std::to_string(resource_version));
  api.SetObjects("pods", pods, std::to_string(resource_version));
  std::string kubeconfig = (dir / "kubeconfig").string();
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                            << "    server: " << api.url()
                            << "\n    certificate-authority: " << api.ca_file()
                            << "\nusers:\n- name: soak\n  user:\n"
                            << "    token: soak-token\ncontexts:\n- name: fake\n  context:\n"
                            << "    cluster: fake\n    user: soak\ncurrent-context: fake\n";

  int port = FreePort();
  std::string listen = "127.0.0.1:" + std::to_string(port);
  std::string log = (dir / "gpuadmit.log").string();
  std::vector<std::string> args = {
      o.gpuadmit, "serve",      "--kubeconfig",      kubeconfig,  "--policy",
      kPolicy,    "--tls-cert", serving.cert_file(), "--tls-key", serving.key_file(),
      "--listen", listen,       "--log-level",       "warn"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, o.gpuadmit.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", o.gpuadmit.c_str());
    return 2;
  }
  httplib::SSLClient probe("127.0.0.1", port);
  probe.enable_server_certificate_verification(false);
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {            // 30 s for the first sync
    if (waitpid(pid, nullptr, WNOHANG) == pid) break;  // it exited: the log says why
    auto res = probe.Get("/readyz");
    ready = res && res->status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready) {
    std::fprintf(stderr, "gpuadmit did not become ready in 30 s; see %s\n", log.c_str());
    kill(pid, SIGKILL);
    return 2;
  }

  // The churn: one watch event every churn_us, from now until the end.
  std::atomic<bool> stop_churn{false};
  std::atomic<uint64_t> events{0};
  std::thread churn([&] {
    Clock::time_point next = Clock::now();
    bool running = true;
    while (!stop_churn.load()) {
      next += std::chrono::microseconds(o.churn_us);
      std::this_thread::sleep_until(next);
      api.PushWatchEvent("pods", {{"type", events.load() == 0 ? "ADDED" : "MODIFIED"},
                                  {"object", ChurnPod(++resource_version, running)}});
      running = !running;
      events.fetch_add(1);
    }
  });

  std::string body = testing::ReadSourceFile("bench/fixtures/pod-review-3k.json");
  double rate = o.rate;
  double max_rate = 0;
  if (rate <= 0) {  // closed loop, 10 s, the same clients: the maximum this machine gives
    Load max;
    std::vector<std::thread> clients;
    for (int i = 0; i < o.connections; ++i) {
      clients.emplace_back(Client, port, std::cref(body), Clock::duration::zero(), std::ref(max));
    }
    std::this_thread::sleep_for(std::chrono::seconds(10));
    max.stop = true;
    for (std::thread& t : clients) t.join();
    max_rate = static_cast<double>(max.sent.load()) / 10.0;
    rate = max_rate / 2;
    std::printf("maximum: %.0f req/s closed loop over %d connections (%llu failed); soak at %.0f\n",
                max_rate, o.connections, static_cast<unsigned long long>(max.failed.load()), rate);
  }

  Load load;
  auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(o.connections) / rate));
  Clock::time_point start = Clock::now();
  std::vector<std::thread> clients;
  for (int i = 0; i < o.connections; ++i) {
    clients.emplace_back(Client, port, std::cref(body), period, std::ref(load));
  }
  std::vector<Sample> samples;
  std::printf("%8s %10s %8s %6s %10s %10s\n", "t_s", "requests", "failed", "fds", "rss_mib",
              "events");
  for (int t = 0; t <= o.duration_s; t += o.sample_s) {
    std::this_thread::sleep_until(start + std::chrono::seconds(t));
    samples.push_back(Probe(pid, t));
    std::printf("%8d %10llu %8llu %6d %10.1f %10llu\n", t,
                static_cast<unsigned long long>(load.sent.load()),
                static_cast<unsigned long long>(load.failed.load()), samples.back().fds,
                static_cast<double>(samples.back().rss_kib) / 1024.0,
                static_cast<unsigned long long>(events.load()));
    std::fflush(stdout);
  }
  load.stop = true;
  for (std::thread& t : clients) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop_churn = true;
  churn.join();

  // The churn reached decisions: snapshots published while it ran.
  std::string snapshots = "?";
  if (auto res = probe.Get("/metrics"); res && res->status == 200) {
    size_t at = res->body.find("\ngpuadmit_inventory_snapshots_total ");
    if (at != std::string::npos) {
      snapshots = res->body.substr(at + 36, res->body.find('\n', at + 1) - at - 36);
    }
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  bool exit_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

  const Sample* warm = &samples.front();
  for (const Sample& s : samples) {
    if (s.t <= o.warmup_s) warm = &s;
  }
  const Sample& last = samples.back();
  double growth = 100.0 * static_cast<double>(last.rss_kib - warm->rss_kib) /
                  static_cast<double>(std::max(1L, warm->rss_kib));
  int fd_growth = last.fds - warm->fds;
  double p50 = Percentile(load.latencies_ms, 0.50);
  double p99 = Percentile(load.latencies_ms, 0.99);
  double worst = load.latencies_ms.empty()
                     ? 0
                     : *std::max_element(load.latencies_ms.begin(), load.latencies_ms.end());
  uint64_t failed = load.failed.load();
  bool pass = failed == 0 && growth < 5.0 && fd_growth <= 0 && exit_ok;
  std::printf(
      "\nsoak: %.0f s at %.0f req/s asked, %.0f achieved (%llu requests, %d connections), %llu "
      "watch events (one per %d us), %s inventory snapshots published by gpuadmit\n"
      "failed requests: %llu%s%s\n"
      "latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n"
      "RSS: %.1f MiB after the %d s warm-up, %.1f MiB at the end: %+.2f%% (limit 5%%)\n"
      "open fds: %d after the warm-up, %d at the end (%+d)\n"
      "SIGTERM: %s\n"
      "result: %s\n",
      elapsed, rate, static_cast<double>(load.sent.load()) / elapsed,
      static_cast<unsigned long long>(load.sent.load()), o.connections,
      static_cast<unsigned long long>(events.load()), o.churn_us, snapshots.c_str(),
      static_cast<unsigned long long>(failed), failed ? "; first: " : "",
      load.first_failure.c_str(), p50, p99, worst, static_cast<double>(warm->rss_kib) / 1024.0,
      o.warmup_s, static_cast<double>(last.rss_kib) / 1024.0, growth, warm->fds, last.fds,
      fd_growth, exit_ok ? "exit 0" : "did not exit 0", pass ? "PASS" : "FAIL");
  if (!pass) std::printf("gpuadmit's log: %s\n", log.c_str());
  if (pass) fs::remove_all(dir);
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) {
  gpuadmit::bench::Options o;
  if (!gpuadmit::bench::ParseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: gpuadmit_soak [--duration S (600)] [--warmup S (60)] [--rate R (0: half "
                 "the measured maximum)] [--connections N (16)] [--churn-us US (1000)] [--sample "
                 "S (10)] [--gpuadmit PATH (build/gpuadmit)]\n");
    return 2;
  }
  return gpuadmit::bench::Run(o);
}
