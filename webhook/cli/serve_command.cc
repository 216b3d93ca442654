// gpuadmit serve: the webhook. Builds the server from its parts (no globals): logger, metrics,
// ledger, handler, TLS server, policy (--policy FILE, reloaded on change), an inventory source
// (--cluster FILE reloaded on change; or the Kubernetes API through --kubeconfig, or in-cluster
// by default), optional GPU metrics, then serves until SIGTERM or SIGINT and drains.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/cli/build_info.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/cli/leader_routing.h"
#include "webhook/cli/serve_pages.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/kube/kube_source.h"
#include "webhook/os/file_reloader.h"
#include "webhook/os/read_file.h"
#include "webhook/queue/gate_lifter.h"
#include "webhook/queue/queue_support.h"
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
    // The reservations this file's pods carry are under the loaded policy's prefix.
    std::shared_ptr<const Policy> policy = handler_.policy();
    auto snapshot = ClusterSnapshotOf(list, path_, policy ? *policy : Policy{});
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

// This machine's hostname (the pod's name in a Deployment), "" when it has none.
std::string Hostname() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

// --leader-elect's flags into `out`; an error message for a bad command line, else "".
std::string ElectionSettings(const Flags& f, LeaderRoutingSettings& out) {
  if (f.Has("cluster")) {
    return "--leader-elect needs the Kubernetes API (--kubeconfig or in-cluster), not --cluster";
  }
  if (!f.Has("advertise")) {
    return "--leader-elect needs --advertise HOST:PORT, where the other replicas reach this one "
           "(the pod IP and the --listen port)";
  }
  std::string host;
  int port = 0;
  if (!SplitHostPort(f.Value("advertise"), host, port) || host.empty() || host == "0.0.0.0") {
    return "--advertise must be a reachable HOST:PORT, not " + f.Value("advertise");
  }
  out.advertise = f.Value("advertise");
  out.lease_namespace = f.Value("leader-election-namespace");
  if (out.lease_namespace.empty()) {  // the service account's namespace, as client-go reads it
    auto ns = ReadWholeFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
    if (ns.ok()) out.lease_namespace = ns.value();
    while (!out.lease_namespace.empty() &&
           std::isspace(static_cast<unsigned char>(out.lease_namespace.back()))) {
      out.lease_namespace.pop_back();
    }
    if (out.lease_namespace.empty()) {
      return "--leader-elect outside a pod needs --leader-election-namespace NS";
    }
  }
  out.identity = f.Value("id");
  if (out.identity.empty()) {
    out.identity = Hostname();
    if (out.identity.empty()) return "--leader-elect needs --id NAME (no hostname to default to)";
  }
  // client-go's and kube-scheduler's defaults: 15 s, 10 s, 2 s (seconds, fractions allowed).
  struct Timing {
    const char* flag;
    std::chrono::milliseconds& value;
  };
  for (Timing t : {Timing{"leader-elect-lease-duration", out.timing.lease_duration},
                   Timing{"leader-elect-renew-deadline", out.timing.renew_deadline},
                   Timing{"leader-elect-retry-period", out.timing.retry_period}}) {
    if (!f.Has(t.flag)) continue;
    double seconds = 0;
    try {
      seconds = std::stod(f.Value(t.flag));
    } catch (const std::exception&) {
      seconds = 0;
    }
    if (!(seconds > 0 && seconds <= 3600)) {
      return std::string("--") + t.flag + " must be seconds in (0, 3600], not " + f.Value(t.flag);
    }
    t.value = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  if (f.Has("leader-elect-replicas")) {
    int64_t replicas = 0;
    try {
      replicas = std::stoll(f.Value("leader-elect-replicas"));
    } catch (const std::exception&) {
      replicas = 0;
    }
    if (replicas < 1 || replicas > 1000) {
      return "--leader-elect-replicas must be a count in [1, 1000], not " +
             f.Value("leader-elect-replicas");
    }
    out.replicas = replicas;
  }
  if (!(out.timing.retry_period < out.timing.renew_deadline &&
        out.timing.renew_deadline < out.timing.lease_duration)) {
    return "leader election needs retry period < renew deadline < lease duration";
  }
  out.tls_cert = f.Value("tls-cert");
  out.peer_ca = f.Value("peer-ca");
  if (out.peer_ca.empty()) {  // beside the serving pair, as cert-manager's Secret has it
    size_t slash = out.tls_cert.rfind('/');
    out.peer_ca = (slash == std::string::npos ? "" : out.tls_cert.substr(0, slash + 1)) + "ca.crt";
  }
  return "";
}

}  // namespace

int ServeCommand(int argc, char** argv) {
  Flags f({"policy",
           "tls-cert",
           "tls-key",
           "client-ca",
           "client-name",
           "listen",
           "cluster",
           "kubeconfig",
           "context",
           "prometheus",
           "dcgm-file",
           "metrics-listen",
           "log-level",
           "max-connections",
           "workers",
           "leader-election-namespace",
           "id",
           "advertise",
           "peer-ca",
           "leader-elect-lease-duration",
           "leader-elect-renew-deadline",
           "leader-elect-retry-period",
           "leader-elect-replicas"},
          {"leader-elect", "metrics-per-node"});
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
  LeaderRoutingSettings election;
  if (f.Has("leader-elect")) {
    if (auto err = ElectionSettings(f, election); !err.empty()) return UsageError("serve", err);
  } else {
    for (const char* only :
         {"leader-election-namespace", "id", "advertise", "peer-ca", "leader-elect-lease-duration",
          "leader-elect-renew-deadline", "leader-elect-retry-period", "leader-elect-replicas"}) {
      if (f.Has(only))
        return UsageError("serve", std::string("--") + only + " needs --leader-elect");
    }
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
  options.client_name = f.Value("client-name");
  if (!options.client_name.empty() && options.client_ca_file.empty()) {
    return UsageError("serve", "--client-name needs --client-ca");
  }

  // Info lines (one per mutated review) wait up to 100 ms and go out together; the wait loop
  // below flushes them when traffic stops.
  Logger log(level, kLogHold);
  Metrics metrics;
  metrics.SetBuildInfo(BuildInfoLabels());
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);
  AdmissionHandler handler(log, metrics, &ledger);
  handler.SetMetricsPerNode(f.Has("metrics-per-node"));

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
  // The Kubernetes API, unless the inventory is a --cluster file.
  std::optional<KubeConfig> kube_config;
  if (!f.Has("cluster")) {
    auto config = KubeConfigFor(f.Value("kubeconfig"), f.Value("context"));
    if (!config.ok()) return ConfigError(config.error().message);
    kube_config = std::move(config).value();
  }
  // A policy whose queue cannot work here is refused, at start and on reload.
  std::unique_ptr<KubeClient> version_client;
  if (kube_config) {
    auto made = KubeClient::Create(*kube_config);
    if (!made.ok()) return ConfigError(made.error().message);
    version_client = std::move(made).value();
  }
  QueueSupport queue_support(std::move(version_client));
  PolicyFileSource policy(
      f.Value("policy"),
      [&handler](std::shared_ptr<const Policy> p) { handler.SetPolicy(std::move(p)); }, metrics,
      log);
  policy.SetServable([&queue_support](const Policy& p) { return queue_support.Check(p); });
  if (!policy.Load(/*initial=*/true)) return ConfigError(policy.error());
  policy.Start();

  // What GET /status shows besides the handler's state.
  StatusSources status{
      .handler = handler,
      .metrics = metrics,
      .inventory_source = f.Has("cluster") ? "cluster file " + f.Value("cluster")
                          : f.Has("kubeconfig")
                              ? "Kubernetes API (kubeconfig " + f.Value("kubeconfig") + ")"
                              : "Kubernetes API (in-cluster)",
      .policy_path = [&policy] { return policy.loaded() ? policy.loaded()->path : ""; },
      .policy_text = [&policy] { return policy.loaded() ? policy.loaded()->text : ""; },
      .policy_loaded_unix_ms =
          [&policy] { return policy.loaded() ? policy.loaded()->at_unix_ms : int64_t{0}; },
      .build = StatusBuildFacts(),
      .ready = [&handler, &stopping] { return !stopping.load() && handler.Ready(); },
  };

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
  std::unique_ptr<LeaderRouting> routing;  // --leader-elect
  if (f.Has("cluster")) {
    file_source = std::make_unique<ClusterFileSource>(f.Value("cluster"), handler, metrics, log,
                                                      exporter_hosts);
    if (!file_source->Load(/*initial=*/true)) return ConfigError(file_source->error());
    file_source->Start();
  } else {
    // The prefix of the policy loaded at start: the key its reservations are written under.
    KubeInventoryOptions inventory_options;
    inventory_options.reservation_annotation = handler.policy()->Annotation("reservation");
    auto kube = StartKubeSource(*kube_config, clock, log, handler, ledger, inventory_options);
    if (!kube.ok()) return ConfigError(kube.error().message);
    kube_source = std::move(kube).value();
    if (f.Has("leader-elect")) {
      auto started = LeaderRouting::Start(election, *kube_config, handler, metrics, log);
      if (!started.ok()) return ConfigError(started.error().message);
      routing = std::move(started).value();
      server.value()->SetReviewRoute(
          [&r = *routing](std::string_view type, std::string_view body, bool forwarded) {
            return r.Route(type, body, forwarded);
          });
    }
  }

  // The capacity queue's gate lifter: idle while the policy queues nothing; with --leader-elect,
  // only the leader lifts.
  std::unique_ptr<KubeClient> lifter_client;
  std::unique_ptr<GateLifter> lifter;
  if (kube_config) {
    auto made = KubeClient::Create(*kube_config);
    if (!made.ok()) return ConfigError(made.error().message);
    lifter_client = std::move(made).value();
    GateLifterOptions lifting;
    lifting.instance = routing ? election.identity : Hostname();
    if (routing) lifting.leading = [&r = *routing] { return r.IsLeader(); };
    lifter = std::make_unique<GateLifter>(*lifter_client, handler, log, metrics, lifting);
    lifter->Start();
  }

  // The status page and the report, on both listeners. The report reads the nodes and pods
  // when asked: the cluster file again, or a copy of the watch's state.
  ReportObjects report_objects = [&kube_source,
                                  path = f.Value("cluster")]() -> Result<ReportCluster> {
    if (kube_source.inventory == nullptr) {
      auto list = LoadClusterList(path);
      if (!list.ok()) return list.error();
      return ReportClusterFromList(list.value());
    }
    ReportCluster cluster;
    std::vector<PodRecord> pods;
    kube_source.inventory->CopyObjects(cluster.nodes, pods);
    cluster.pods.reserve(pods.size());
    for (const PodRecord& pod : pods) cluster.pods.push_back(ReportPodFromRecord(pod));
    return cluster;
  };
  server.value()->SetPages(ServeWebPages(status, report_objects));
  if (metrics_server) metrics_server->SetPages(ServeWebPages(status, report_objects));

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
  // Every half hold, so that held lines go out from here, before an event loop logging a review
  // finds the oldest has waited the whole hold and writes them itself.
  const timespec tick{0, std::chrono::nanoseconds(kLogHold).count() / 2};
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
  // The Lease released at once, so another replica leads within its next retry (2 s); reviews
  // still arriving here are forwarded to it, or decided here until it is known.
  if (routing) routing->Stop();
  // No gate is lifted after this: the pass in progress ends, and the next leader carries on.
  if (lifter) {
    lifter_client->Cancel();  // a request in progress ends at once
    lifter->Stop();
  }
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
