// gpuadmit report: consolidation opportunities, MIG layout pressure and time-slicing
// replicas (core/report, docs/report.md), from a --cluster file or the Kubernetes API
// (--kubeconfig, else in-cluster), with GPU metrics from DCGM files (--dcgm-file, repeatable:
// each file one reading of the window, oldest first) or Prometheus (--prometheus, --samples
// readings --interval seconds apart), and gpuadmit's own counters from a scrape of its /metrics
// (--gpuadmit-metrics).
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "core/inventory/gpu_metrics.h"
#include "core/inventory/prometheus_samples.h"
#include "core/report/report.h"
#include "core/report/report_render.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/reflector.h"
#include "webhook/os/read_file.h"
#include "webhook/sources/config_files.h"
#include "webhook/sources/prometheus_source.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// 500: the page size the reflectors list with (webhook/kube/reflector.h).
constexpr int kPageSize = 500;
// dcgm-exporter's default collection interval: the spacing given to the readings of
// --dcgm-file files, which carry no time of their own, and the default --interval.
constexpr std::chrono::seconds kReadingInterval{15};

// Every item of a paged List of `path`, each given `kind` (List items carry none). With
// `absent_is_empty`, a 404 or 403 is no items, with a warning on stderr.
Result<std::vector<json>> ListAll(KubeClient& client, const std::string& path,
                                  const std::string& query, const std::string& kind,
                                  bool absent_is_empty = false) {
  std::vector<json> items;
  std::string next;
  do {
    std::string url = path + "?limit=" + std::to_string(kPageSize) + query;
    if (!next.empty()) url += "&continue=" + next;
    auto response = client.List(url);
    if (!response.ok()) return Error{"listing " + path + ": " + response.error().message};
    const int status = response.value().status;
    if (absent_is_empty && (status == 404 || status == 403)) {
      std::cerr << fmt::format("gpuadmit report: listing {}: HTTP {}; counted as none\n", path,
                               status);
      return items;
    }
    if (status != 200) return Error{fmt::format("listing {}: HTTP {}", path, status)};
    json page = json::parse(response.value().body, nullptr, false);
    if (!page.is_object()) return Error{"listing " + path + ": the answer is not a JSON object"};
    if (auto it = page.find("items"); it != page.end() && it->is_array()) {
      for (json& item : *it) {
        item["kind"] = kind;
        items.push_back(std::move(item));
      }
    }
    next = page.value("/metadata/continue"_json_pointer, std::string());
  } while (!next.empty());
  return items;
}

// `kubectl get nodes,pods -A -o json`, from the API: nodes and non-terminal pods.
Result<json> ListCluster(const Flags& f) {
  auto config = KubeConfigFor(f.Value("kubeconfig"), f.Value("context"));
  if (!config.ok()) return config.error();
  auto client = KubeClient::Create(config.value());
  if (!client.ok()) return client.error();
  auto nodes = ListAll(*client.value(), "/api/v1/nodes", "", "Node");
  if (!nodes.ok()) return nodes.error();
  auto pods = ListAll(*client.value(), "/api/v1/pods",
                      "&fieldSelector=" + std::string(kNonTerminalPods), "Pod");
  if (!pods.ok()) return pods.error();
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(nodes).value()}};
  for (json& pod : pods.value()) list["items"].push_back(std::move(pod));
  // The DRA kinds the inventory counts devices from. A cluster that does not serve them (404),
  // or a role that may not list them (403), has no DRA devices to count, as in the inventory.
  for (auto [resource, kind] :
       {std::pair{"resourceslices", "ResourceSlice"}, std::pair{"resourceclaims", "ResourceClaim"},
        std::pair{"deviceclasses", "DeviceClass"}}) {
    auto items = ListAll(*client.value(), std::string("/apis/resource.k8s.io/v1/") + resource, "",
                         kind, /*absent_is_empty=*/true);
    if (!items.ok()) return items.error();
    for (json& item : items.value()) list["items"].push_back(std::move(item));
  }
  return list;
}

// The window of GPU metrics the flags ask for; null without a metrics flag.
Result<std::shared_ptr<const ClusterGpuMetrics>> ReadMetrics(const Flags& f, int samples,
                                                             std::chrono::milliseconds interval) {
  std::vector<std::string> files = f.Values("dcgm-file");
  if (files.empty() && !f.Has("prometheus")) return std::shared_ptr<const ClusterGpuMetrics>();
  size_t readings = f.Has("prometheus") ? static_cast<size_t>(samples) : files.size();
  GpuMetricsHistory history(
      {.span = interval * static_cast<int>(readings + 1), .max_points = readings});
  MetricsTime at{};
  if (f.Has("prometheus")) {
    auto reader = MakePrometheusReader(f.Value("prometheus"));
    if (!reader.ok()) return reader.error();
    for (int i = 0; i < samples; ++i) {
      if (i > 0) std::this_thread::sleep_for(interval);
      auto reading = reader.value()->Read();
      if (!reading.ok()) return Error{f.Value("prometheus") + ": " + reading.error().message};
      // As for a --dcgm-file: a Prometheus that scrapes no dcgm-exporter is a wrong source,
      // not a cluster without GPU load.
      if (reading.value().gpus.empty()) {
        return Error{f.Value("prometheus") + ": no DCGM GPU series"};
      }
      history.Add(reading.value(), at);
      at += interval;
    }
  } else {
    for (const std::string& file : files) {
      auto reading = MakeDcgmFileReader(file)->Read();
      if (!reading.ok()) return reading.error();
      if (reading.value().gpus.empty()) return Error{file + ": no DCGM GPU series"};
      history.Add(reading.value(), at);
      at += interval;
    }
  }
  return std::make_shared<const ClusterGpuMetrics>(history.Publish());
}

bool ParseNumber(const std::string& text, double& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

int ReportCommand(int argc, char** argv) {
  Flags f({"cluster", "kubeconfig", "context", "prometheus", "dcgm-file", "samples", "interval",
           "gpuadmit-metrics", "underused-allocation", "underused-utilization", "o", "output"},
          {}, {"dcgm-file"});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("report", err);
  if (!f.positional().empty()) return UsageError("report", "no positional arguments");
  if (f.Has("cluster") && f.Has("kubeconfig")) {
    return UsageError("report", "--cluster and --kubeconfig are alternatives; give one");
  }
  if (f.Has("prometheus") && f.Has("dcgm-file")) {
    return UsageError("report", "--prometheus and --dcgm-file are alternatives; give one");
  }
  std::string format = f.Value("o", f.Value("output", "text"));
  if (format != "text" && format != "json") return UsageError("report", "-o must be text or json");
  ReportOptions options;
  struct Threshold {
    const char* flag;
    double* value;
  };
  for (Threshold t :
       {Threshold{"underused-allocation", &options.consolidation.underused_allocation_percent},
        Threshold{"underused-utilization", &options.consolidation.underused_utilization_percent}}) {
    if (!f.Has(t.flag)) continue;
    if (!ParseNumber(f.Value(t.flag), *t.value) || *t.value < 0 || *t.value > 100) {
      return UsageError("report", fmt::format("--{} must be a percentage from 0 to 100, not \"{}\"",
                                              t.flag, f.Value(t.flag)));
    }
  }
  double samples = 1;
  double interval_s = static_cast<double>(kReadingInterval.count());
  if (f.Has("samples") || f.Has("interval")) {
    if (!f.Has("prometheus"))
      return UsageError("report", "--samples and --interval need --prometheus");
    if (f.Has("samples") && (!ParseNumber(f.Value("samples"), samples) || samples < 1 ||
                             samples > 1000 || samples != static_cast<int>(samples))) {
      return UsageError("report", "--samples must be a whole number from 1 to 1000");
    }
    if (f.Has("interval") &&
        (!ParseNumber(f.Value("interval"), interval_s) || interval_s <= 0 || interval_s > 3600)) {
      return UsageError("report", "--interval must be seconds above 0, at most 3600");
    }
  }

  auto list = f.Has("cluster") ? LoadClusterList(f.Value("cluster")) : ListCluster(f);
  if (!list.ok()) return ConfigError(list.error().message);
  auto cluster = ReportClusterFromList(list.value());
  if (!cluster.ok()) {
    std::string where = f.Has("cluster") ? f.Value("cluster") : std::string("the API's lists");
    return ConfigError(where + ": " + cluster.error().message);
  }
  auto interval = std::chrono::milliseconds(static_cast<int64_t>(interval_s * 1000));
  auto metrics = ReadMetrics(f, static_cast<int>(samples), interval);
  if (!metrics.ok()) return ConfigError(metrics.error().message);

  ReportInput input;
  input.nodes = std::move(cluster.value().nodes);
  input.pods = std::move(cluster.value().pods);
  if (metrics.value()) {
    // dcgm-exporter's host label is often its pod's name: rename to the pod's node.
    input.metrics = std::make_shared<const ClusterGpuMetrics>(
        RenameNodes(*metrics.value(), PodNodesOf(list.value())));
  }
  if (f.Has("gpuadmit-metrics")) {
    auto text = ReadWholeFile(f.Value("gpuadmit-metrics"));
    if (!text.ok()) return ConfigError(text.error().message);
    input.mig_counters = MigPressureFromSamples(ParseExposition(text.value()).samples);
  }
  Report report = BuildReport(input, options);
  std::cout << (format == "json" ? ReportJson(report) : ReportText(report));
  return kExitOk;
}

}  // namespace gpuadmit
