// The inventory gauges at the largest cluster Kubernetes supports: builds bench/scale's
// 5,000-node, 150,000-pod cluster into a ClusterState, then measures, over its snapshot, what
// serve does once per published snapshot (SnapshotPublisher::Publish: ComputeInventoryGauges
// and Metrics::SetInventory) and
// what every scrape does (Metrics::Render), without and with --metrics-per-node. Checks the
// default /metrics against the issue's bounds (200 KB, 5 ms to render) and exits 1 beyond them.
//
//   gpuadmit_metrics_bench [--nodes 5000] [--pods 150000]
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
#include "core/inventory/inventory_gauges.h"
#include "core/kube/kube_objects.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit::bench {
namespace {

using std::chrono::steady_clock;

constexpr size_t kMaxDefaultBytes = 200 * 1000;
constexpr double kMaxRenderMs = 5.0;

double Ms(steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The median of `runs` timings of `f`, in milliseconds.
template <typename F>
double MedianMs(int runs, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto start = steady_clock::now();
    f();
    ms.push_back(Ms(steady_clock::now() - start));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Measured {
  double compute_ms;  // ComputeInventoryGauges alone
  double publish_ms;  // SnapshotPublisher::Publish: the gauges computed and rendered
  double render_ms;   // Metrics::Render: one scrape
  size_t bytes;       // /metrics' size
};

Measured Measure(std::shared_ptr<const InventorySnapshot> snapshot, Reservations& reservations,
                 bool per_node) {
  Measured m{};
  Logger log(LogLevel::kError);
  Metrics metrics;
  metrics.SetBuildInfo(R"(version="bench")");
  AdmissionHandler handler(log, metrics, &reservations);
  SnapshotPublisher publisher(handler, metrics, &reservations, {.per_node = per_node});
  std::vector<Claim> reserved = reservations.Totals();
  m.compute_ms = MedianMs(9, [&] { ComputeInventoryGauges(*snapshot, reserved, per_node); });
  m.publish_ms = MedianMs(9, [&] { publisher.Publish(snapshot); });
  std::string text;
  m.render_ms = MedianMs(21, [&] { text = metrics.Render(); });
  m.bytes = text.size();
  return m;
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
  auto snapshot = std::make_shared<const InventorySnapshot>(state.Snapshot(1));
  // A few reservations in flight, as under admission load.
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);
  for (int i = 0; i < 64; ++i) {
    (void)reservations.Commit("uid-" + std::to_string(i), "bench/pod",
                              {{cluster.NodeName(i * 7 % nodes), "nvidia.com/gpu", 1, 8}});
  }
  Measured plain = Measure(snapshot, reservations, false);
  Measured per_node = Measure(snapshot, reservations, true);
  std::printf("inventory gauges at %d nodes, %d pods (medians)\n", nodes, pods);
  for (auto [name, m] : {std::pair{"default", plain}, std::pair{"--metrics-per-node", per_node}}) {
    std::printf(
        "  %-19s per snapshot: compute %.3f ms, Publish %.3f ms; per scrape: /metrics %zu "
        "bytes, Render() %.3f ms\n",
        name, m.compute_ms, m.publish_ms, m.bytes, m.render_ms);
  }
  bool ok = plain.bytes <= kMaxDefaultBytes && plain.render_ms <= kMaxRenderMs;
  std::printf("%s - default /metrics within %zu bytes and %.0f ms\n", ok ? "ok" : "not ok",
              kMaxDefaultBytes, kMaxRenderMs);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) { return gpuadmit::bench::Main(argc, argv); }
