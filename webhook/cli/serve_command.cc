// gpuadmit serve: the webhook. Builds the server from its parts (no globals): logger, metrics,
// ledger, handler, TLS server, policy (--policy FILE, reloaded on change), an inventory source
// (--cluster FILE reloaded on change; or the Kubernetes API through --kubeconfig, or in-cluster
// by default), optional GPU metrics, then serves until SIGTERM or SIGINT and drains.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/cli/build_info.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/cli/leader_routing.h"
#include "webhook/cli/serve_pages.h"
#include "webhook/cli/serve_settings.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/kube/kube_source.h"
#include "webhook/os/file_reloader.h"
#include "webhook/queue/gate_lifter.h"
#include "webhook/queue/queue_support.h"
#include "webhook/server/metrics_server.h"
#include "webhook/server/review_forwarder.h"
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
  ClusterFileSource(std::string path, SnapshotPublisher& publisher, Metrics& metrics, Logger& log,
                    std::atomic<std::shared_ptr<const HostToNode>>& hosts)
      : path_(std::move(path)),
        publisher_(publisher),
        metrics_(metrics),
        log_(log),
        hosts_(hosts),
        reloader_(path_, std::chrono::seconds(1), [this] { Load(/*initial=*/false); }) {}

  bool Load(bool initial) {
    auto list = LoadClusterList(path_);
    // The reservations this file's pods carry are under the loaded policy's prefix.
    std::shared_ptr<const Policy> policy = publisher_.handler().policy();
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
    publisher_.Publish(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
    hosts_.store(std::make_shared<const HostToNode>(PodNodesOf(list.value())));
    return true;
  }
  void Start() { reloader_.Start(); }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  SnapshotPublisher& publisher_;
  Metrics& metrics_;
  Logger& log_;
  std::atomic<std::shared_ptr<const HostToNode>>& hosts_;
  std::string error_;
  FileReloader reloader_;
};

// Every part serve runs, built in this order by Build and destroyed in the reverse one: each
// part's destructor stops and joins its own threads, after Run has stopped the listeners and
// joined theirs.
class Serve {
 public:
  // Info lines (one per mutated review) wait up to kLogHold and go out together; Run's wait
  // loop flushes them when traffic stops.
  explicit Serve(const ServeSettings& settings)
      : settings_(settings),
        f_(settings.flags),
        log_(settings.level, kLogHold),
        ledger_(clock_, kDefaultReservationTtl),
        handler_(log_, metrics_, &ledger_),
        publisher_(handler_, metrics_, &ledger_, {.per_node = f_.Has("metrics-per-node")}) {}

  // Builds the parts and starts their threads: "" or the configuration error's message.
  std::string Build();
  // Serves until SIGTERM or SIGINT (blocked in every thread by the caller), then drains; the
  // exit code.
  int Run(const sigset_t& stop_signals);

 private:
  std::string BuildInventory();
  void BuildPages();
  std::string BuildGpuMetrics();
  // After a stop signal: readiness off, listeners closed, in-flight answers written, the Lease
  // released, no gate lifted after it; true when drained by the deadline.
  bool Drain();
  bool Ready() const { return !stopping_.load() && handler_.Ready(); }

  const ServeSettings& settings_;
  const Flags& f_;
  Logger log_;
  Metrics metrics_;
  SteadyClock clock_;
  SharedLedger ledger_;
  AdmissionHandler handler_;
  SnapshotPublisher publisher_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<TlsServer> server_;
  std::unique_ptr<MetricsServer> metrics_server_;  // --metrics-listen
  std::optional<KubeConfig> kube_config_;          // unless --cluster
  std::unique_ptr<QueueSupport> queue_support_;
  std::unique_ptr<PolicyFileSource> policy_;
  std::optional<StatusSources> status_;
  std::unique_ptr<FileReloader> cert_reloader_;
  std::unique_ptr<FileReloader> key_reloader_;
  // dcgm-exporter hosts that are its pods' names, mapped to their nodes: from the cluster file
  // here; with the live API, looked up in the pod watch's state at each metrics poll.
  std::atomic<std::shared_ptr<const HostToNode>> exporter_hosts_{
      std::make_shared<const HostToNode>()};
  std::unique_ptr<ClusterFileSource> file_source_;  // --cluster
  KubeSource kube_source_;                          // the Kubernetes API
  std::unique_ptr<LeaderRouting> routing_;          // --leader-elect
  std::string peer_name_;  // --leader-elect: the replicas' name, read from --tls-cert in Build
  std::unique_ptr<KubeClient> lifter_client_;
  std::unique_ptr<GateLifter> lifter_;
  std::unique_ptr<GpuMetricsPoller> gpu_metrics_;  // --prometheus or --dcgm-file
  std::thread serving_;
  std::thread metrics_serving_;
};

std::string Serve::Build() {
  metrics_.SetBuildInfo(BuildInfoLabels());
  // TLS and the port first: the cheapest checks, and a failure is then the only line printed.
  // With --leader-elect, a client presenting a certificate like this replica's own is a peer.
  ServerOptions options = settings_.server;
  if (f_.Has("leader-elect")) {
    auto name = CertificateDnsName(settings_.election.tls_cert);
    if (!name.ok()) return "--leader-elect: " + name.error().message;
    options.peer_ca_file = settings_.election.peer_ca;
    options.peer_name = peer_name_ = name.value();
  }
  auto server = TlsServer::Create(options, handler_, metrics_, log_);
  if (!server.ok()) return server.error().message;
  server_ = std::move(server).value();
  metrics_.SetCertificateExpiry(server_->CertificateNotAfterUnix());
  // Plain HTTP for Prometheus and probes; /readyz there turns 503 with the TLS one's at a stop.
  if (f_.Has("metrics-listen")) {
    auto made = MetricsServer::Create(settings_.metrics_host, settings_.metrics_port, metrics_,
                                      [this] { return Ready(); });
    if (!made.ok()) return made.error().message;
    metrics_server_ = std::move(made).value();
  }
  // The Kubernetes API, unless the inventory is a --cluster file. A policy whose queue cannot
  // work there is refused, at start and on reload.
  std::unique_ptr<KubeClient> version_client;
  if (!f_.Has("cluster")) {
    auto config = KubeConfigFor(f_.Value("kubeconfig"), f_.Value("context"));
    if (!config.ok()) return config.error().message;
    kube_config_ = std::move(config).value();
    auto made = KubeClient::Create(*kube_config_);
    if (!made.ok()) return made.error().message;
    version_client = std::move(made).value();
  }
  queue_support_ = std::make_unique<QueueSupport>(std::move(version_client));
  policy_ = std::make_unique<PolicyFileSource>(
      f_.Value("policy"),
      [this](std::shared_ptr<const Policy> p) { handler_.SetPolicy(std::move(p)); }, metrics_,
      log_);
  policy_->SetServable([this](const Policy& p) { return queue_support_->Check(p); });
  if (!policy_->Load(/*initial=*/true)) return policy_->error();
  policy_->Start();

  // A Secret mount swaps both files at once; either one changing reloads the pair.
  auto reload_certificate = [this] { ReloadServingCertificate(*server_, metrics_, log_); };
  cert_reloader_ = std::make_unique<FileReloader>(settings_.server.cert_file,
                                                  std::chrono::seconds(1), reload_certificate);
  key_reloader_ = std::make_unique<FileReloader>(settings_.server.key_file,
                                                 std::chrono::seconds(1), reload_certificate);
  cert_reloader_->Start();
  key_reloader_->Start();

  if (auto err = BuildInventory(); !err.empty()) return err;
  BuildPages();
  return BuildGpuMetrics();
}

// The inventory (the --cluster file, or the API's watch), leader routing, and the capacity
// queue's gate lifter: idle while the policy queues nothing; with --leader-elect, only the
// leader lifts.
std::string Serve::BuildInventory() {
  if (f_.Has("cluster")) {
    file_source_ = std::make_unique<ClusterFileSource>(f_.Value("cluster"), publisher_, metrics_,
                                                       log_, exporter_hosts_);
    if (!file_source_->Load(/*initial=*/true)) return file_source_->error();
    file_source_->Start();
    return "";
  }
  // The prefix of the policy loaded at start: the key its reservations are written under.
  KubeInventoryOptions inventory_options;
  inventory_options.reservation_annotation = handler_.policy()->Annotation("reservation");
  auto kube = StartKubeSource(*kube_config_, clock_, log_, publisher_, ledger_, inventory_options);
  if (!kube.ok()) return kube.error().message;
  kube_source_ = std::move(kube).value();
  if (f_.Has("leader-elect")) {
    LeaderRoutingSettings election = settings_.election;
    election.peer_name = peer_name_;
    auto started = LeaderRouting::Start(election, *kube_config_, handler_, metrics_, log_);
    if (!started.ok()) return started.error().message;
    routing_ = std::move(started).value();
    server_->SetReviewRoute(
        [&r = *routing_](std::string_view type, std::string_view body, bool forwarded,
                         std::string_view scope) { return r.Route(type, body, forwarded, scope); });
  }
  auto made = KubeClient::Create(*kube_config_);
  if (!made.ok()) return made.error().message;
  lifter_client_ = std::move(made).value();
  GateLifterOptions lifting;
  lifting.instance = routing_ ? settings_.election.identity : Hostname();
  if (routing_) lifting.leading = [&r = *routing_] { return r.IsLeader(); };
  lifter_ = std::make_unique<GateLifter>(*lifter_client_, handler_, log_, metrics_, lifting);
  lifter_->Start();
  return "";
}

// The status page and the report, on both listeners. The report reads the nodes and pods when
// asked: the cluster file again, or a copy of the watch's state.
void Serve::BuildPages() {
  status_.emplace(StatusSources{
      .handler = handler_,
      .metrics = metrics_,
      .publisher = &publisher_,
      .inventory_source = f_.Has("cluster") ? "cluster file " + f_.Value("cluster")
                          : f_.Has("kubeconfig")
                              ? "Kubernetes API (kubeconfig " + f_.Value("kubeconfig") + ")"
                              : "Kubernetes API (in-cluster)",
      .policy_path = [this] { return policy_->loaded() ? policy_->loaded()->path : ""; },
      .policy_text = [this] { return policy_->loaded() ? policy_->loaded()->text : ""; },
      .policy_loaded_unix_ms =
          [this] { return policy_->loaded() ? policy_->loaded()->at_unix_ms : int64_t{0}; },
      .build = StatusBuildFacts(),
      .ready = [this] { return Ready(); },
  });
  ReportObjects report_objects = [this, path = f_.Value("cluster")]() -> Result<ReportCluster> {
    if (kube_source_.inventory == nullptr) {
      auto list = LoadClusterList(path);
      if (!list.ok()) return list.error();
      return ReportClusterFromList(list.value());
    }
    ReportCluster cluster;
    std::vector<PodRecord> pods;
    DraDevices dra;
    kube_source_.inventory->CopyObjects(cluster.nodes, pods, dra);
    cluster.pods.reserve(pods.size());
    for (const PodRecord& pod : pods) cluster.pods.push_back(ReportPodFromRecord(pod));
    AddDraDevices(cluster, dra);
    return cluster;
  };
  server_->SetPages(ServeWebPages(*status_, report_objects));
  if (metrics_server_) metrics_server_->SetPages(ServeWebPages(*status_, report_objects));
}

std::string Serve::BuildGpuMetrics() {
  if (!f_.Has("prometheus") && !f_.Has("dcgm-file")) return "";
  auto made = MakeGpuMetricsReader(f_.Value("prometheus"), f_.Value("dcgm-file"));
  if (!made.ok()) return made.error().message;
  GpuMetricsPollerOptions poll;
  poll.source = f_.Has("prometheus") ? f_.Value("prometheus") : f_.Value("dcgm-file");
  poll.on_publish = [this](std::shared_ptr<const ClusterGpuMetrics> m) {
    std::shared_ptr<const HostToNode> hosts = exporter_hosts_.load();
    if (kube_source_.inventory != nullptr) {  // live: the exporter pods from the pod watch
      std::set<std::string, std::less<>> names;
      for (const NodeGpuMetrics& node : m->nodes()) names.insert(node.node);
      hosts = std::make_shared<const HostToNode>(kube_source_.inventory->NodesOfPodsNamed(names));
    }
    if (!hosts->empty()) m = std::make_shared<const ClusterGpuMetrics>(RenameNodes(*m, *hosts));
    handler_.SetGpuMetrics(std::move(m));
  };
  gpu_metrics_ =
      std::make_unique<GpuMetricsPoller>(std::move(made).value(), clock_, log_, poll);
  gpu_metrics_->Start();
  return "";
}

int Serve::Run(const sigset_t& stop_signals) {
  pthread_t main_thread = pthread_self();
  serving_ = std::thread([this, main_thread] {
    server_->Run();
    pthread_kill(main_thread, SIGUSR1);  // the server's own "I stopped" note
  });
  if (metrics_server_) {
    metrics_serving_ = std::thread([this] { metrics_server_->Run(); });
    log_.Info("metrics listening", {{"address", f_.Value("metrics-listen")}});
  }
  int signal_number = -1;
  // Every half hold, so that held lines go out from here, before an event loop logging a review
  // finds the oldest has waited the whole hold and writes them itself.
  const timespec tick{0, std::chrono::nanoseconds(kLogHold).count() / 2};
  while (signal_number < 0) {
    signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
    log_.Flush();
  }
  int code = kExitOk;
  if (signal_number == SIGUSR1) {
    log_.Error("server stopped on its own");
    code = kExitConfig;
  } else {
    log_.Info("signal received, draining",
              {{"signal", signal_number == SIGTERM ? "SIGTERM" : "SIGINT"}});
    if (!Drain()) log_.Warn("drain deadline reached with requests still in flight");
  }
  if (metrics_server_) metrics_server_->Stop();
  // Returns once every connection has closed: an idle kept-alive one after the server's linger.
  serving_.join();
  if (metrics_serving_.joinable()) metrics_serving_.join();
  if (code == kExitOk) log_.Info("stopped");
  return code;
}

bool Serve::Drain() {
  stopping_.store(true);
  server_->Stop();
  // The Lease released at once, so another replica leads within its next retry (2 s); reviews
  // still arriving here are forwarded to it, or decided here until it is known.
  if (routing_) routing_->Stop();
  // No gate is lifted after this: the pass in progress ends, and the next leader carries on.
  if (lifter_) {
    lifter_client_->Cancel();  // a request in progress ends at once
    lifter_->Stop();
  }
  // 8 s: inside Kubernetes' 30 s grace period, with the server's linger after it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  // 200 ms: a request already being read when the listener closed reaches routing well within it.
  return server_->Drain(std::chrono::milliseconds(200), deadline);
}

}  // namespace

int ServeCommand(int argc, char** argv) {
  ServeSettings settings;
  if (auto err = ParseServe(argc, argv, settings); !err.empty()) return UsageError("serve", err);
  // The stop signals blocked before any thread starts, so that every thread inherits the mask
  // and Run alone receives them, with sigtimedwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGUSR1);  // the server thread's own "I stopped" note
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  Serve serve(settings);
  if (auto err = serve.Build(); !err.empty()) return ConfigError(err);
  return serve.Run(stop_signals);
}

}  // namespace gpuadmit
