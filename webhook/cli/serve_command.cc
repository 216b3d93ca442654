// gpuadmit serve: the webhook. Builds the server from its parts (no globals): logger, metrics,
// ledger, handler, TLS server, policy (--policy FILE, reloaded on change), an inventory source
// (--cluster FILE reloaded on change; or the Kubernetes API through --kubeconfig, or in-cluster
// by default), optional GPU metrics, then serves until SIGTERM or SIGINT and drains.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/cli/build_info.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/kube/kube_source.h"
#include "webhook/os/file_reloader.h"
#include "webhook/server/metrics_server.h"
#include "webhook/server/tls_server.h"
#include "webhook/sources/config_files.h"
#include "webhook/sources/policy_file_source.h"
#include "webhook/sources/prometheus_source.h"

namespace gpuadmit {
namespace {

using HostToNode = std::map<std::string, std::string, std::less<>>;

// How long an info line may wait to be written with the ones after it (Logger).
constexpr std::chrono::milliseconds kLogHold(100);

// The inventory of --cluster FILE: loaded now, and again whenever the file changes. A file that
// no longer loads keeps the last good snapshot, with a warning and a counter.
class ClusterFileSource {
 public:
  // `hosts` receives, with each good load, the file's pod name -> node map for the GPU metrics.
  ClusterFileSource(std::string path, AdmissionHandler& handler, Metrics& metrics, Logger& log,
                    std::atomic<std::shared_ptr<const HostToNode>>& hosts)
      : path_(std::move(path)),
        handler_(handler),
        metrics_(metrics),
        log_(log),
        hosts_(hosts),
        reloader_(path_, std::chrono::seconds(1), [this] { Load(/*initial=*/false); }) {}

  bool Load(bool initial) {
    auto list = LoadClusterList(path_);
    auto snapshot = ClusterSnapshotOf(list, path_);
    if (!snapshot.ok()) {
      if (!initial) {
        metrics_.Inc(Counter::kClusterReloadFailures);
        log_.Warn("cluster file reload failed; keeping the last good inventory",
                  {{"error", snapshot.error().message}});
      }
      error_ = snapshot.error().message;
      return false;
    }
    log_.Info(initial ? "inventory loaded" : "inventory reloaded",
              {{"file", path_},
               {"nodes", std::to_string(snapshot.value().nodes().size())},
               {"pods", std::to_string(snapshot.value().pod_count())}});
    handler_.SetSnapshot(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
    hosts_.store(std::make_shared<const HostToNode>(PodNodesOf(list.value())));
    return true;
  }
  void Start() { reloader_.Start(); }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  AdmissionHandler& handler_;
  Metrics& metrics_;
  Logger& log_;
  std::atomic<std::shared_ptr<const HostToNode>>& hosts_;
  std::string error_;
  FileReloader reloader_;
};

}  // namespace

int ServeCommand(int argc, char** argv) {
  Flags f(
      {"policy", "tls-cert", "tls-key", "client-ca", "listen", "cluster", "kubeconfig", "context",
       "prometheus", "dcgm-file", "metrics-listen", "log-level", "max-connections", "workers"},
      {});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("serve", err);
  for (const char* required : {"policy", "tls-cert", "tls-key"}) {
    if (!f.Has(required)) return UsageError("serve", std::string("--") + required + " is required");
  }
  if (f.Has("cluster") && f.Has("kubeconfig")) {
    return UsageError("serve", "--cluster and --kubeconfig are alternatives; give one");
  }
  if (f.Has("prometheus") && f.Has("dcgm-file")) {
    return UsageError("serve", "--prometheus and --dcgm-file are alternatives; give one");
  }
  std::string metrics_host;
  int metrics_port = 0;
  if (f.Has("metrics-listen") &&
      !SplitHostPort(f.Value("metrics-listen"), metrics_host, metrics_port)) {
    return UsageError("serve",
                      "--metrics-listen must be HOST:PORT, not " + f.Value("metrics-listen"));
  }
  LogLevel level = LogLevel::kInfo;
  if (f.Has("log-level") && !ParseLogLevel(f.Value("log-level"), level)) {
    return UsageError("serve", "--log-level must be debug, info, warn or error");
  }
  ServerOptions options;
  if (!SplitHostPort(f.Value("listen", "0.0.0.0:8443"), options.host, options.port)) {
    return UsageError("serve", "--listen must be HOST:PORT, not " + f.Value("listen"));
  }
  if (f.Has("max-connections")) {
    try {
      options.max_connections = std::stoul(f.Value("max-connections"));
    } catch (const std::exception&) {
      return UsageError("serve", "--max-connections must be a number");
    }
  }
  if (f.Has("workers")) {
    try {
      options.worker_threads = static_cast<unsigned>(std::stoul(f.Value("workers")));
    } catch (const std::exception&) {
      return UsageError("serve", "--workers must be a number");
    }
    if (options.worker_threads == 0 || options.worker_threads > 256) {
      return UsageError("serve", "--workers must be between 1 and 256");
    }
  }
  options.cert_file = f.Value("tls-cert");
  options.key_file = f.Value("tls-key");
  options.client_ca_file = f.Value("client-ca");

  // Info lines (one per mutated review) wait up to 100 ms and go out together; the wait loop
  // below flushes them when traffic stops.
  Logger log(level, kLogHold);
  Metrics metrics;
  metrics.SetBuildInfo(BuildInfoLabels());
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);
  AdmissionHandler handler(log, metrics, &ledger);

  // Block the stop signals in every thread; this one waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGUSR1);  // the server thread's own "I stopped" note
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // TLS and the port first: the cheapest checks, and a failure is then the only line printed.
  auto server = TlsServer::Create(options, handler, metrics, log);
  if (!server.ok()) return ConfigError(server.error().message);
  metrics.SetCertificateExpiry(server.value()->CertificateNotAfterUnix());
  // Plain HTTP for Prometheus and probes; /readyz there turns 503 with the TLS one's at a stop.
  std::atomic<bool> stopping{false};
  std::unique_ptr<MetricsServer> metrics_server;
  if (f.Has("metrics-listen")) {
    auto made = MetricsServer::Create(metrics_host, metrics_port, metrics, [&handler, &stopping] {
      return !stopping.load() && handler.Ready();
    });
    if (!made.ok()) return ConfigError(made.error().message);
    metrics_server = std::move(made).value();
  }
  PolicyFileSource policy(
      f.Value("policy"),
      [&handler](std::shared_ptr<const Policy> p) { handler.SetPolicy(std::move(p)); }, metrics,
      log);
  if (!policy.Load(/*initial=*/true)) return ConfigError(policy.error());
  policy.Start();

  // A Secret mount swaps both files at once; either one changing reloads the pair.
  auto reload_certificate = [&s = *server.value(), &metrics, &log] {
    ReloadServingCertificate(s, metrics, log);
  };
  FileReloader cert_reloader(options.cert_file, std::chrono::seconds(1), reload_certificate);
  FileReloader key_reloader(options.key_file, std::chrono::seconds(1), reload_certificate);
  cert_reloader.Start();
  key_reloader.Start();

  // dcgm-exporter hosts that are its pods' names, mapped to their nodes: from the cluster file
  // here; with the live API, looked up in the pod watch's state at each metrics poll.
  std::atomic<std::shared_ptr<const HostToNode>> exporter_hosts{
      std::make_shared<const HostToNode>()};
  std::unique_ptr<ClusterFileSource> file_source;
  KubeSource kube_source;
  if (f.Has("cluster")) {
    file_source = std::make_unique<ClusterFileSource>(f.Value("cluster"), handler, metrics, log,
                                                      exporter_hosts);
    if (!file_source->Load(/*initial=*/true)) return ConfigError(file_source->error());
    file_source->Start();
  } else {
    auto config = KubeConfigFor(f.Value("kubeconfig"), f.Value("context"));
    if (!config.ok()) return ConfigError(config.error().message);
    auto kube = StartKubeSource(config.value(), clock, log, handler, ledger);
    if (!kube.ok()) return ConfigError(kube.error().message);
    kube_source = std::move(kube).value();
  }

  std::unique_ptr<GpuMetricsPoller> gpu_metrics;
  if (f.Has("prometheus") || f.Has("dcgm-file")) {
    auto made = MakeGpuMetricsReader(f.Value("prometheus"), f.Value("dcgm-file"));
    if (!made.ok()) return ConfigError(made.error().message);
    std::unique_ptr<GpuMetricsReader> reader = std::move(made).value();
    GpuMetricsPollerOptions poll;
    poll.source = f.Has("prometheus") ? f.Value("prometheus") : f.Value("dcgm-file");
    poll.on_publish = [&handler, &exporter_hosts,
                       &kube_source](std::shared_ptr<const ClusterGpuMetrics> m) {
      std::shared_ptr<const HostToNode> hosts = exporter_hosts.load();
      if (kube_source.inventory != nullptr) {  // live: the exporter pods from the pod watch
        std::set<std::string, std::less<>> names;
        for (const NodeGpuMetrics& node : m->nodes()) names.insert(node.node);
        hosts = std::make_shared<const HostToNode>(kube_source.inventory->NodesOfPodsNamed(names));
      }
      if (!hosts->empty()) m = std::make_shared<const ClusterGpuMetrics>(RenameNodes(*m, *hosts));
      handler.SetGpuMetrics(std::move(m));
    };
    gpu_metrics = std::make_unique<GpuMetricsPoller>(std::move(reader), clock, log, poll);
    gpu_metrics->Start();
  }

  TlsServer& s = *server.value();
  pthread_t main_thread = pthread_self();
  std::thread serving([&] {
    s.Run();
    pthread_kill(main_thread, SIGUSR1);
  });
  serving
      .detach();  // idle kept-alive connections may outlive the drain; the process exit ends them
  if (metrics_server) {
    // Detached as `serving` is: a scrape in flight must not hold the exit past the drain.
    std::thread([&m = *metrics_server] { m.Run(); }).detach();
    log.Info("metrics listening", {{"address", f.Value("metrics-listen")}});
  }
  auto stop_metrics = [&metrics_server] {
    if (metrics_server) metrics_server->Stop();
  };

  int signal_number = -1;
  const timespec tick{0, std::chrono::nanoseconds(kLogHold).count()};
  while (signal_number < 0) {
    signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
    log.Flush();
  }
  if (signal_number == SIGUSR1) {
    stop_metrics();
    log.Error("server stopped on its own");
    log.Flush();
    std::fflush(nullptr);
    std::_Exit(kExitConfig);  // as below: the detached threads still use what this frame owns
  }
  log.Info("signal received, draining",
           {{"signal", signal_number == SIGTERM ? "SIGTERM" : "SIGINT"}});
  stopping.store(true);
  s.Stop();
  // 8 s: inside the 10 s the issue allows, and inside Kubernetes' 30 s grace period.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  // 200 ms: a request already being read when the listener closed reaches routing well within it.
  bool drained = s.Drain(std::chrono::milliseconds(200), deadline);
  if (!drained) log.Warn("drain deadline reached with requests still in flight");
  stop_metrics();
  log.Info("stopped");
  log.Flush();  // _Exit runs no destructor: a line still held would be lost
  std::fflush(nullptr);
  std::_Exit(kExitOk);
}

}  // namespace gpuadmit
