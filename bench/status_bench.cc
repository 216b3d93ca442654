// The status page at the largest cluster Kubernetes supports: bench/scale's
// 5,000-node, 150,000-pod cluster, a DCGM window of 20 readings for eight GPUs on every node, and
// 200 recent decisions; measures GET /status's work (CollectStatus then RenderStatusPage) and
// /status.json's, for the default page (20 nodes), the largest page (500), and a filter that
// matches one node. Exits 1 when the default page takes over 50 ms (the bound).
//
//   gpuadmit_status_bench [--nodes 5000] [--pods 150000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/scale/scale_cluster.h"
#include "bench/scale/scale_state.h"
#include "core/inventory/cluster_state.h"
#include "core/kube/kube_objects.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/status/status_json.h"
#include "webhook/status/status_model.h"
#include "webhook/status/status_page.h"

namespace gpuadmit::bench {
namespace {

using std::chrono::steady_clock;

constexpr double kMaxDefaultPageMs = 50.0;

double Ms(steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Timing {
  double median_ms = 0;
  double max_ms = 0;
  size_t bytes = 0;
};

template <typename F>
Timing Time(int runs, F&& f) {
  std::vector<double> ms;
  Timing t;
  for (int i = 0; i < runs; ++i) {
    auto start = steady_clock::now();
    t.bytes = f().size();
    ms.push_back(Ms(steady_clock::now() - start));
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.max_ms = ms.back();
  return t;
}

// Eight GPUs per node, `readings` readings 15 s apart, varying so every chart has a line.
std::shared_ptr<const ClusterGpuMetrics> MetricsFor(const ScaleCluster& cluster, int readings) {
  GpuMetricsHistory history;
  MetricsTime t0{};
  for (int r = 0; r < readings; ++r) {
    GpuReading reading;
    for (int n = 0; n < cluster.node_count(); ++n) {
      for (int g = 0; g < 8; ++g) {
        GpuSample s;
        s.node = cluster.NodeName(n);
        s.gpu = g;
        s.model_name = "NVIDIA H100 80GB HBM3";
        s.utilization_percent = (n * 7 + g * 13 + r * 11) % 100;
        s.fb_used_mib = 1000 + (r * 97 + g * 31) % 70000;
        s.fb_free_mib = 81920 - *s.fb_used_mib;
        s.temperature_c = 35 + (r + g) % 40;
        s.power_w = 100 + (n + r * 3 + g) % 600;
        reading.gpus.push_back(std::move(s));
      }
    }
    history.Add(reading, t0 + std::chrono::seconds(15 * r));
  }
  return std::make_shared<const ClusterGpuMetrics>(history.Publish());
}

int Main(int argc, char** argv) {
  int nodes = 5000;
  int pods = 150000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--pods") == 0) pods = std::atoi(argv[i + 1]);
  }
  ScaleCluster cluster(nodes, pods);
  ClusterState state("gpuadmit.io/reservation");
  LoadScaleCluster(cluster, state);
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(state.Snapshot(1)));
  handler.SetGpuMetrics(MetricsFor(cluster, 20));
  // 200 recent decisions, each with a trail and a warning, through the review path's own log.
  DecisionLog& decisions = const_cast<DecisionLog&>(handler.decision_log());
  for (int i = 0; i < 250; ++i) {
    decisions.Record(
        {.at_unix_ms = 1'790'000'000'000 + i,
         .uid = "uid-" + std::to_string(i),
         .object = "Pod ml/train-" + std::to_string(i),
         .outcome = ReviewOutcome::kPatched,
         .asked = "nvidia.com/mig-2g.20gb=1",
         .fallback = "2g.20gb -> 1g.10gb",
         .sharing_mode = "mig",
         .node = cluster.NodeName(i % nodes),
         .warnings = {"gpuadmit: fell back to 1g.10gb"},
         .trail = {"nvidia.com/mig-2g.20gb x1: free on no node", "fallback 2g.20gb -> 1g.10gb",
                   "placement (most-idle): " + cluster.NodeName(i % nodes)}});
  }
  std::string policy(4000, '#');
  StatusSources sources{.handler = handler,
                        .metrics = metrics,
                        .inventory_source = "bench",
                        .policy_path = [] { return std::string("policy.yaml"); },
                        .policy_text = [&policy] { return policy; },
                        .policy_loaded_unix_ms = [] { return int64_t{1'790'000'000'000}; },
                        .build = {{"version", "bench"}}};
  const int64_t now = 1'790'000'100'000;
  struct Case {
    const char* name;
    StatusQuery query;
  } cases[] = {
      {"default page (20 nodes)", {}},
      {"largest page (100 nodes)", {.per_page = StatusQuery::kMaxPerPage}},
      {"filter matching one node", {.node = cluster.NodeName(nodes / 2)}},
  };
  std::printf("status page at %d nodes, %d pods, 8 GPUs x 20 readings per node, 200 decisions\n",
              nodes, pods);
  double default_ms = 0;
  for (const Case& c : cases) {
    Timing html = Time(15, [&] { return RenderStatusPage(CollectStatus(sources, c.query, now)); });
    Timing json = Time(15, [&] { return RenderStatusJson(CollectStatus(sources, c.query, now)); });
    std::printf(
        "  %-26s /status %7.2f ms median (max %7.2f), %8zu bytes; /status.json %7.2f ms "
        "median, %8zu bytes\n",
        c.name, html.median_ms, html.max_ms, html.bytes, json.median_ms, json.bytes);
    if (default_ms == 0) default_ms = html.median_ms;
  }
  bool ok = default_ms <= kMaxDefaultPageMs;
  std::printf("%s - the default page within %.0f ms\n", ok ? "ok" : "not ok", kMaxDefaultPageMs);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) { return gpuadmit::bench::Main(argc, argv); }
