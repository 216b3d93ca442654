// Micro-benchmarks of the request path without the network: decode + plan + patch + encode of a
// real ~3 KB pod review (bench/fixtures/pod-review-3k.json) on the demo cluster, with the
// requested profile free (allow) and exhausted (fallback patch).
#include <benchmark/benchmark.h>

#include "core/admission.h"
#include "core/review.h"
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

void BM_DecodeOnly(benchmark::State& state) {
  for (auto _ : state) {
    auto request = DecodeAdmissionReview(Body());
    benchmark::DoNotOptimize(request);
  }
}
BENCHMARK(BM_DecodeOnly);

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
