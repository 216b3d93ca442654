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
#include "webhook/cli_support.h"
#include "webhook/config_files.h"
#include "webhook/flags.h"
#include "webhook/read_file.h"
#include "webhook/shared_ledger.h"
#include "webhook/tls_server.h"

namespace gpuadmit {
namespace {

// Reads the review body from a file, or standard input for "-" or no argument.
Result<std::string> ReadInput(const std::vector<std::string>& positional) {
  if (positional.empty() || positional[0] == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  }
  return ReadWholeFile(positional[0]);
}

}  // namespace

int UsageError(const std::string& command, const std::string& message) {
  std::cerr << "gpuadmit " << command << ": " << message << " (see gpuadmit --help)\n";
  return kExitUsage;
}

int ConfigError(const std::string& message) {
  std::cerr << "gpuadmit: " << message << "\n";
  return kExitConfig;
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
