#include "webhook/commands.h"

#include <fmt/format.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/review.h"
#include "webhook/admission_handler.h"
#include "webhook/config_files.h"
#include "webhook/flags.h"
#include "webhook/read_file.h"
#include "webhook/shared_ledger.h"
#include "webhook/tls_server.h"

namespace gpuadmit {
namespace {

int UsageError(const std::string& command, const std::string& message) {
  std::cerr << "gpuadmit " << command << ": " << message << " (see gpuadmit --help)\n";
  return kExitUsage;
}

int ConfigError(const std::string& message) {
  std::cerr << "gpuadmit: " << message << "\n";
  return kExitConfig;
}

// Reads the review body from a file, or standard input for "-" or no argument.
Result<std::string> ReadInput(const std::vector<std::string>& positional) {
  if (positional.empty() || positional[0] == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  }
  return ReadWholeFile(positional[0]);
}

}  // namespace

int ServeCommand(int argc, char** argv) {
  Flags f({"policy", "tls-cert", "tls-key", "listen", "cluster", "kubeconfig", "prometheus",
           "metrics-listen", "log-level", "max-connections"},
          {});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("serve", err);
  for (const char* required : {"policy", "tls-cert", "tls-key"}) {
    if (!f.Has(required)) return UsageError("serve", std::string("--") + required + " is required");
  }
  // Live sources arrive with the inventory issue; refuse them clearly rather than ignore them.
  for (const char* later : {"kubeconfig", "prometheus", "metrics-listen"}) {
    if (f.Has(later)) {
      return UsageError("serve",
                        std::string("--") + later + " is not supported yet; use --cluster FILE");
    }
  }
  if (!f.Has("cluster")) {
    return UsageError("serve",
                      "--cluster FILE is required (in-cluster inventory is not built yet)");
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
  options.cert_file = f.Value("tls-cert");
  options.key_file = f.Value("tls-key");

  Logger log(level);
  Metrics metrics;
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
  auto policy = LoadPolicyFile(f.Value("policy"));
  if (!policy.ok()) return ConfigError(policy.error().message);
  auto snapshot = LoadClusterFile(f.Value("cluster"));
  if (!snapshot.ok()) return ConfigError(snapshot.error().message);
  log.Info("inventory loaded", {{"file", f.Value("cluster")},
                                {"nodes", std::to_string(snapshot.value().nodes().size())},
                                {"pods", std::to_string(snapshot.value().pod_count())}});
  handler.SetPolicy(std::make_shared<const Policy>(std::move(policy).value()));
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
  TlsServer& s = *server.value();
  pthread_t main_thread = pthread_self();
  std::thread serving([&] {
    s.Run();
    pthread_kill(main_thread, SIGUSR1);
  });
  serving
      .detach();  // idle kept-alive connections may outlive the drain; the process exit ends them

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  if (signal_number == SIGUSR1) {
    log.Error("server stopped on its own");
    return kExitConfig;
  }
  log.Info("signal received, draining",
           {{"signal", signal_number == SIGTERM ? "SIGTERM" : "SIGINT"}});
  s.Stop();
  // 8 s: inside the 10 s the issue allows, and inside Kubernetes' 30 s grace period.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  // 200 ms: a request already being read when the listener closed reaches routing well within it.
  bool drained = s.Drain(std::chrono::milliseconds(200), deadline);
  if (!drained) log.Warn("drain deadline reached with requests still in flight");
  log.Info("stopped");
  std::fflush(nullptr);
  std::_Exit(kExitOk);
}

int ReviewCommand(int argc, char** argv) {
  Flags f({"policy", "cluster"}, {"explain"});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("review", err);
  if (!f.Has("policy") || !f.Has("cluster")) {
    return UsageError("review", "--policy FILE and --cluster FILE are required");
  }
  if (f.positional().size() > 1) return UsageError("review", "one review file at most");
  auto policy = LoadPolicyFile(f.Value("policy"));
  if (!policy.ok()) return ConfigError(policy.error().message);
  auto snapshot = LoadClusterFile(f.Value("cluster"));
  if (!snapshot.ok()) return ConfigError(snapshot.error().message);
  auto body = ReadInput(f.positional());
  if (!body.ok()) return ConfigError(body.error().message);

  // The same handler serve uses, so the answer is byte for byte what serve sends.
  Logger log(f.Has("explain") ? LogLevel::kDebug : LogLevel::kError);
  Metrics metrics;
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);  // fresh, as a server that just started
  AdmissionHandler handler(log, metrics, &ledger);
  handler.SetPolicy(std::make_shared<const Policy>(std::move(policy).value()));
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
  HandlerAnswer answer = handler.Handle("application/json", body.value());
  std::cout << answer.body << "\n";
  if (answer.status != 200) {
    std::cerr << "gpuadmit review: HTTP " << answer.status << "\n";
    return kExitRejected;
  }
  return kExitOk;
}

int CheckPolicyCommand(int argc, char** argv) {
  Flags f({}, {});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("check-policy", err);
  if (f.positional().size() != 1) return UsageError("check-policy", "one policy file expected");
  auto text = ReadWholeFile(f.positional()[0]);
  if (!text.ok()) return ConfigError(text.error().message);
  auto policy = LoadPolicyFile(f.positional()[0]);
  if (!policy.ok()) {
    std::cerr << policy.error().message << "\n";
    return kExitRejected;
  }
  std::cout << f.positional()[0] << ": ok\n";
  return kExitOk;
}

int InventoryCommand(int argc, char** argv) {
  Flags f({"cluster", "kubeconfig", "o", "output"}, {});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("inventory", err);
  if (f.Has("kubeconfig")) return UsageError("inventory", "--kubeconfig is not supported yet");
  if (!f.Has("cluster")) return UsageError("inventory", "--cluster FILE is required");
  std::string format = f.Value("o", f.Value("output", "table"));
  if (format != "table" && format != "json") {
    return UsageError("inventory", "-o must be table or json");
  }
  auto snapshot = LoadClusterFile(f.Value("cluster"));
  if (!snapshot.ok()) return ConfigError(snapshot.error().message);

  const InventorySnapshot& s = snapshot.value();
  auto pending_on = [&](const NodeInventory& n, const std::string& r) {
    auto it = s.pending_by_node().find(n.name());
    return it == s.pending_by_node().end() ? 0 : Get(it->second, r);
  };
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const NodeInventory& n : s.nodes()) {
      nlohmann::json resources = nlohmann::json::object();
      for (const auto& [r, alloc] : n.facts->allocatable) {
        resources[r] = {{"allocatable", alloc},
                        {"used", Get(n.used, r)},
                        {"pending", pending_on(n, r)},
                        {"free", n.Free(r)}};
      }
      out.push_back({{"node", n.name()},
                     {"product", n.Product()},
                     {"ready", n.facts->ready},
                     {"cordoned", n.facts->unschedulable},
                     {"resources", resources}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  constexpr std::string_view kRow = "{:<24} {:<24} {:<16} {:<28} {:>6} {:>6} {:>8} {:>6}\n";
  std::cout << fmt::format(fmt::runtime(kRow), "NODE", "PRODUCT", "STATUS", "RESOURCE", "ALLOC",
                           "USED", "PENDING", "FREE");
  for (const NodeInventory& n : s.nodes()) {
    std::string status = n.facts->ready ? "Ready" : "NotReady";
    if (n.facts->unschedulable) status += ",Cordoned";
    std::string product(n.Product().empty() ? "-" : n.Product());
    if (n.facts->allocatable.empty()) {
      std::cout << fmt::format(fmt::runtime(kRow), n.name(), product, status, "-", "-", "-", "-",
                               "-");
    }
    for (const auto& [r, alloc] : n.facts->allocatable) {
      std::cout << fmt::format(fmt::runtime(kRow), n.name(), product, status, r, alloc,
                               Get(n.used, r), pending_on(n, r), n.Free(r));
    }
  }
  for (const auto& [r, count] : s.pending()) {
    std::cout << fmt::format("pending, not yet bound: {} {}\n", r, count);
  }
  return kExitOk;
}

}  // namespace gpuadmit
