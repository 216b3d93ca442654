// Micro-benchmarks of the request path without the network: decode + plan + patch + encode of a
// real ~3 KB pod review (bench/fixtures/pod-review-3k.json) on the demo cluster, with the
// requested profile free and exhausted (fallback patch), under the built-in default policy (every
// stage on: the free case gets a placement patch), and on 5,000 nodes.
#include <benchmark/benchmark.h>

#include "core/admission/admission.h"
#include "core/admission/review.h"
#include "core/admission/review_decode.h"
#include "core/inventory/reservation_ledger.h"
#include "core/policy/policy.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

const std::string& Body() {
  static const std::string body = testing::ReadSourceFile("bench/fixtures/pod-review-3k.json");
  return body;
}

void BM_ReviewAllow(benchmark::State& state) {
  InventorySnapshot snapshot = testing::SnapshotOf(testing::DemoCluster());
  Policy policy;
  for (auto _ : state) {
    auto answer = Review(Body(), snapshot, policy);
    benchmark::DoNotOptimize(answer);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Body().size()));
}
BENCHMARK(BM_ReviewAllow);

// The review as `make run` and bench/load/run.sh serve it: the example policy
// (manifests/examples/policy.yaml), the demo cluster, and a reservation ledger that each review
// commits to (every request carries the same uid, so each commit replaces the last).
void BM_ReviewAsServed(benchmark::State& state) {
  InventorySnapshot snapshot = testing::SnapshotOf(testing::DemoCluster());
  auto policy = ParsePolicy(testing::ReadSourceFile("manifests/examples/policy.yaml"));
  if (!policy.ok()) {
    state.SkipWithError("manifests/examples/policy.yaml does not parse");
    return;
  }
  ReservationLedger ledger(std::chrono::seconds(30));
  LedgerReservations reservations(ledger);
  ReviewContext context{snapshot, policy.value(), nullptr, &reservations};
  for (auto _ : state) {
    auto answer = Review(Body(), context);
    benchmark::DoNotOptimize(answer);
  }
}
BENCHMARK(BM_ReviewAsServed);

void BM_ReviewFallbackPatch(benchmark::State& state) {
  nlohmann::json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  InventorySnapshot snapshot = testing::SnapshotOf(cluster);
  Policy policy;
  for (auto _ : state) {
    auto answer = Review(Body(), snapshot, policy);
    benchmark::DoNotOptimize(answer);
  }
}
BENCHMARK(BM_ReviewFallbackPatch);

// The same review on 5,000 GPU nodes: the demo's two GPU nodes cloned 2,500 times each, every
// clone with one bound pod using one of its devices, so free counts differ across nodes.
nlohmann::json LargeCluster(int copies) {
  nlohmann::json demo = testing::DemoCluster();
  nlohmann::json items = nlohmann::json::array();
  for (const nlohmann::json& item : demo["items"]) {
    if (item["kind"] != "Node" || item["metadata"]["name"] == "gpu-sim-control-plane") continue;
    for (int i = 0; i < copies; ++i) {
      nlohmann::json node = item;
      std::string name = item["metadata"]["name"].get<std::string>() + "-" + std::to_string(i);
      node["metadata"]["name"] = name;
      node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
      items.push_back(std::move(node));
    }
  }
  nlohmann::json cluster = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  for (int i = 0; i < copies; ++i) {
    testing::AddBoundPods(cluster, "gpu-medium-" + std::to_string(i), "nvidia.com/mig-2g.20gb",
                          1 + i % 3);
    testing::AddBoundPods(cluster, "gpu-small-" + std::to_string(i), "nvidia.com/mig-1g.10gb",
                          1 + i % 5);
  }
  return cluster;
}

void BM_ReviewAt5000Nodes(benchmark::State& state) {
  InventorySnapshot snapshot = testing::SnapshotOf(LargeCluster(2500));
  Policy policy;
  for (auto _ : state) {
    auto answer = Review(Body(), snapshot, policy);
    benchmark::DoNotOptimize(answer);
  }
  state.counters["nodes"] = static_cast<double>(snapshot.nodes().size());
}
BENCHMARK(BM_ReviewAt5000Nodes);

void BM_DecodeOnly(benchmark::State& state) {
  for (auto _ : state) {
    auto request = DecodeAdmissionReview(Body());
    benchmark::DoNotOptimize(request);
  }
}
BENCHMARK(BM_DecodeOnly);

// What Review decodes: the fields decisions read, from simdjson's DOM.
void BM_DecodeForDecisions(benchmark::State& state) {
  for (auto _ : state) {
    auto request = DecodeForDecisions(Body(), {});
    benchmark::DoNotOptimize(request);
  }
}
BENCHMARK(BM_DecodeForDecisions);

void BM_JsonParseOnly(benchmark::State& state) {
  for (auto _ : state) {
    auto doc = nlohmann::json::parse(Body(), nullptr, false);
    benchmark::DoNotOptimize(doc);
  }
}
BENCHMARK(BM_JsonParseOnly);

}  // namespace
}  // namespace gpuadmit

BENCHMARK_MAIN();
