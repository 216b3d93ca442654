#include "webhook/cli/commands.h"

#include <fmt/format.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/admission/review.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/flags.h"
#include "webhook/os/read_file.h"
#include "webhook/server/tls_server.h"
#include "webhook/sources/config_files.h"
#include "webhook/sources/prometheus_source.h"

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
  Flags f({"policy", "cluster", "dcgm-file"}, {"explain"});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("review", err);
  if (!f.Has("policy") || !f.Has("cluster")) {
    return UsageError("review", "--policy FILE and --cluster FILE are required");
  }
  if (f.positional().size() > 1) return UsageError("review", "one review file at most");
  auto policy = LoadPolicyFile(f.Value("policy"));
  if (!policy.ok()) return ConfigError(policy.error().message);
  auto list = LoadClusterList(f.Value("cluster"));
  auto snapshot = ClusterSnapshotOf(list, f.Value("cluster"), policy.value());
  if (!snapshot.ok()) return ConfigError(snapshot.error().message);
  auto body = ReadInput(f.positional());
  if (!body.ok()) return ConfigError(body.error().message);

  // The same handler serve uses, so the answer is byte for byte what serve sends.
  Logger log(LogLevel::kError);
  Metrics metrics;
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);  // fresh, as a server that just started
  AdmissionHandler handler(log, metrics, &ledger);
  handler.SetPolicy(std::make_shared<const Policy>(std::move(policy).value()));
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(std::move(snapshot).value()));
  handler.SetExplain(f.Has("explain"));
  if (f.Has("dcgm-file")) {
    // One reading, its hosts mapped to nodes as serve maps them for a cluster file.
    auto reading = MakeDcgmFileReader(f.Value("dcgm-file"))->Read();
    if (!reading.ok()) return ConfigError(reading.error().message);
    handler.SetGpuMetrics(std::make_shared<const ClusterGpuMetrics>(RenameNodes(
        ClusterGpuMetrics::FromReading(reading.value(), clock.Now()), PodNodesOf(list.value()))));
  }
  HandlerAnswer answer = handler.Handle("application/json", body.value());
  std::cout << answer.body << "\n";
  if (f.Has("explain")) {
    for (const std::string& step : answer.trail) std::cerr << step << "\n";
  }
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
  if (policy.value().queue.enabled) {
    std::cout << f.positional()[0]
              << ": note: queue.enabled needs the Kubernetes API at 1.30 or newer, and RBAC to "
                 "patch pods and create events (docs/queue.md)\n";
  }
  return kExitOk;
}

}  // namespace gpuadmit
