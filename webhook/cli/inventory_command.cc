// gpuadmit inventory: nodes, GPUs, and per resource allocatable/used/queued/free (queued: pods
// waiting for the scheduler, counted where docs/decisions.md says), with GPU
// utilisation and memory when a metrics source is given. From a --cluster file, or from the
// Kubernetes API (--kubeconfig, or in-cluster by default) after one full sync.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/inventory/gpu_metrics.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/sources/config_files.h"
#include "webhook/sources/prometheus_source.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// 60 s: a first list of 150,000 pods takes a few seconds; a minute means the API is not answering.
constexpr std::chrono::seconds kSyncTimeout{60};

Result<std::shared_ptr<const InventorySnapshot>> FromKubernetes(const Flags& f) {
  auto config = KubeConfigFor(f.Value("kubeconfig"), f.Value("context"));
  if (!config.ok()) return config.error();
  auto nodes = KubeClient::Create(config.value());
  if (!nodes.ok()) return nodes.error();
  auto pods = KubeClient::Create(config.value());
  if (!pods.ok()) return pods.error();
  std::vector<std::unique_ptr<KubeClient>> dra_clients;
  for (int i = 0; i < 4; ++i) {
    auto made = KubeClient::Create(config.value());
    if (!made.ok()) return made.error();
    dra_clients.push_back(std::move(made).value());
  }
  const DraApis dra{*dra_clients[0], *dra_clients[1], *dra_clients[2], *dra_clients[3]};
  Logger log(LogLevel::kError);
  SteadyClock clock;
  std::mutex mu;
  std::condition_variable published;
  std::shared_ptr<const InventorySnapshot> first;
  KubeInventory inventory(
      *nodes.value(), *pods.value(), clock, log, {},
      [&](std::shared_ptr<const InventorySnapshot> s) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::move(s);
        published.notify_all();
      },
      nullptr, &dra);
  inventory.Start();
  {
    std::unique_lock<std::mutex> lock(mu);
    published.wait_for(lock, kSyncTimeout, [&] { return first != nullptr; });
  }
  inventory.Stop();
  if (!first)
    return Error{"no full list of nodes and pods from " + config.value().server + " within 60 s"};
  return first;
}

// Where a node's resource comes from: DRA devices, or the Node's allocatable (a device plugin).
std::string SourceOf(const NodeInventory& n, const std::string& resource) {
  return n.facts->dra_allocatable.contains(resource) ? "dra" : "plugin";
}

std::string Percent(std::optional<double> v) {
  return v ? fmt::format("{:.0f}%", *v) : std::string("-");
}

}  // namespace

int InventoryCommand(int argc, char** argv) {
  Flags f({"cluster", "kubeconfig", "context", "prometheus", "dcgm-file", "o", "output"}, {});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("inventory", err);
  if (f.Has("cluster") && f.Has("kubeconfig")) {
    return UsageError("inventory", "--cluster and --kubeconfig are alternatives; give one");
  }
  std::string format = f.Value("o", f.Value("output", "table"));
  if (format != "table" && format != "json") {
    return UsageError("inventory", "-o must be table or json");
  }

  std::map<std::string, std::string, std::less<>> host_to_node;
  std::shared_ptr<const InventorySnapshot> snapshot;
  if (f.Has("cluster")) {
    auto list = LoadClusterList(f.Value("cluster"));
    // No policy, no ledger: the reservation annotation's key makes no difference here.
    auto loaded = ClusterSnapshotOf(list, f.Value("cluster"), Policy{});
    if (!loaded.ok()) return ConfigError(loaded.error().message);
    snapshot = std::make_shared<const InventorySnapshot>(std::move(loaded).value());
    host_to_node = PodNodesOf(list.value());
  } else {
    auto live = FromKubernetes(f);
    if (!live.ok()) return ConfigError(live.error().message);
    snapshot = std::move(live).value();
  }
  const InventorySnapshot& s = *snapshot;

  std::shared_ptr<const ClusterGpuMetrics> metrics;
  if (f.Has("prometheus") || f.Has("dcgm-file")) {
    auto made = MakeGpuMetricsReader(f.Value("prometheus"), f.Value("dcgm-file"));
    if (!made.ok()) return ConfigError(made.error().message);
    std::unique_ptr<GpuMetricsReader> reader = std::move(made).value();
    auto reading = reader->Read();
    if (!reading.ok()) return ConfigError(reading.error().message);
    metrics = std::make_shared<const ClusterGpuMetrics>(RenameNodes(
        ClusterGpuMetrics::FromReading(reading.value(), std::chrono::steady_clock::now()),
        host_to_node));
  }
  auto gpu = [&](const NodeInventory& n) {
    return metrics ? metrics->FindNode(n.name()) : nullptr;
  };
  auto memory = [](const NodeGpuMetrics* m) -> std::string {
    if (m == nullptr) return "-";
    double used = 0;
    double total = 0;
    for (const GpuMetrics& g : m->gpus) {
      if (g.latest.IsMigInstance()) continue;  // a whole GPU's framebuffer covers its instances
      used += g.latest.fb_used_mib.value_or(0);
      total += g.latest.fb_used_mib.value_or(0) + g.latest.fb_free_mib.value_or(0);
    }
    return total > 0 ? fmt::format("{:.0f}/{:.0f}Mi", used, total) : std::string("-");
  };
  if (format == "json") {
    json out = json::array();
    for (const NodeInventory& n : s.nodes()) {
      json resources = json::object();
      for (const auto& [r, alloc] : n.facts->allocatable) {
        resources[r] = {{"allocatable", alloc},
                        {"used", Get(n.used, r)},
                        {"queued", Get(n.queued, r)},
                        {"free", n.Free(r)},
                        {"source", SourceOf(n, r)}};
      }
      json row = {{"node", n.name()},
                  {"product", n.Product()},
                  {"ready", n.facts->ready},
                  {"cordoned", n.facts->unschedulable},
                  {"resources", resources}};
      if (!n.facts->dra_pools.empty()) row["draPools"] = n.facts->dra_pools;
      if (const NodeGpuMetrics* m = gpu(n)) {
        row["gpuUtilizationPercent"] =
            m->MeanUtilizationPercent() ? json(*m->MeanUtilizationPercent()) : json();
        row["gpuMemory"] = memory(m);
      }
      out.push_back(std::move(row));
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  constexpr std::string_view kRow =
      "{:<24} {:<24} {:<16} {:<26} {:<7} {:>6} {:>6} {:>7} {:>6} {:>5} {:>16}\n";
  std::cout << fmt::format(fmt::runtime(kRow), "NODE", "PRODUCT", "STATUS", "RESOURCE", "SOURCE",
                           "ALLOC", "USED", "QUEUED", "FREE", "UTIL", "GPU MEMORY");
  for (const NodeInventory& n : s.nodes()) {
    std::string status = n.facts->ready ? "Ready" : "NotReady";
    if (n.facts->unschedulable) status += ",Cordoned";
    std::string product(n.Product().empty() ? "-" : n.Product());
    const NodeGpuMetrics* m = gpu(n);
    std::string util = m ? Percent(m->MeanUtilizationPercent()) : "-";
    if (n.facts->allocatable.empty()) {
      std::cout << fmt::format(fmt::runtime(kRow), n.name(), product, status, "-", "-", "-", "-",
                               "-", "-", util, memory(m));
    }
    for (const auto& [r, alloc] : n.facts->allocatable) {
      std::cout << fmt::format(fmt::runtime(kRow), n.name(), product, status, r, SourceOf(n, r),
                               alloc, Get(n.used, r), Get(n.queued, r), n.Free(r), util,
                               memory(m));
    }
  }
  for (const NodeInventory& n : s.nodes()) {
    if (n.facts->dra_pools.empty()) continue;
    std::cout << fmt::format("DRA pools of {}: {}\n", n.name(), fmt::join(n.facts->dra_pools, ", "));
  }
  for (const auto& [r, count] : s.unplaceable()) {
    std::cout << fmt::format(
        "queued, held nowhere (fits on no node it may use, or Unschedulable): {} {}\n", r, count);
  }
  if (metrics) {
    for (const NodeGpuMetrics& m : metrics->nodes()) {
      if (s.FindNode(m.node) == nullptr) {
        std::cout << fmt::format("metrics for a host that is no node: {}\n", m.node);
      }
    }
  }
  return kExitOk;
}

}  // namespace gpuadmit
