// Micro-benchmarks of the request path without the network: decode + plan + patch + encode of a
// real ~3 KB pod review (bench/fixtures/pod-review-3k.json) on the demo cluster, with the
// requested profile free and exhausted (fallback patch), under the built-in default policy (every
// stage on: the free case gets a placement patch), and on 5,000 nodes. The *Cold benchmarks evict
// the caches before each iteration, as a served review finds them on this VM.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <array>

#include "bench/between_iterations.h"
#include "core/admission/admission.h"
#include "core/admission/review.h"
#include "core/inventory/reservation_ledger.h"
#include "core/plan/command_line.h"
#include "core/plan/workload_type.h"
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
// commits to (every request carries the same uid, so each commit replaces the last). With
// `evict_kib`, the caches are evicted before each review, outside the timing; with `idle_us`,
// the thread sleeps that long before each review, outside the timing, as a server between
// requests does.
void ReviewAsServed(benchmark::State& state, int64_t evict_kib, bool huge_pages,
                    int64_t idle_us = 0) {
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
    if (evict_kib > 0 || idle_us > 0) {
      state.PauseTiming();
      if (evict_kib > 0) EvictCaches(evict_kib, huge_pages);
      IdleFor(idle_us);
      state.ResumeTiming();
    }
    auto answer = Review(Body(), context);
    benchmark::DoNotOptimize(answer);
  }
}

void BM_ReviewAsServed(benchmark::State& state) { ReviewAsServed(state, 0, false); }
BENCHMARK(BM_ReviewAsServed);

// A served review at 1,000 req/s on this VM costs 2-3x its warm time; this says how much of that
// the caches explain.
void BM_ReviewAsServedCold(benchmark::State& state) {
  ReviewAsServed(state, state.range(0), state.range(1) != 0);
}
BENCHMARK(BM_ReviewAsServedCold)
    ->Iterations(1000)
    ->ArgNames({"evict_kib", "huge"})
    ->ArgsProduct({{1024, 65536}, {0, 1}});

// Served at 1,000 req/s, a review follows about 1 ms of idle time. This says what the idle
// time alone costs it, with nothing evicted on purpose: the vCPU halts, and the host may run
// something else on its core meanwhile.
void BM_ReviewAsServedIdle(benchmark::State& state) {
  ReviewAsServed(state, 0, false, state.range(0));
}
BENCHMARK(BM_ReviewAsServedIdle)->Iterations(1000)->ArgName("idle_us")->Arg(100)->Arg(1000);

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

// Workload type detection's cost: the 3 KB review asking for one whole GPU, its
// container an unlabelled vLLM server (vllm/vllm-openai with --model: found by image, after
// every command pattern of the table missed) or an unknown script (python train.py: the whole
// table missed), with detection off (arg 0) and on (arg 1), under the default policy.
const std::string& WholeGpuBody(bool vllm) {
  static const std::array<std::string, 2> bodies = [] {
    std::array<std::string, 2> out;
    for (int i = 0; i < 2; ++i) {
      nlohmann::json review = nlohmann::json::parse(Body());
      nlohmann::json& c = review["request"]["object"]["spec"]["containers"][0];
      c["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}},
                        {"requests", {{"nvidia.com/gpu", "1"}}}};
      if (i == 1) {
        c["image"] = "vllm/vllm-openai:v0.5.0";
        c["args"] = {"--model", "mistralai/Mistral-7B-Instruct-v0.3", "--max-model-len", "8192"};
      } else {
        c["image"] = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime";
        c["command"] = {"python", "train.py", "--epochs", "10", "--batch-size", "64"};
      }
      out[i] = review.dump();
    }
    return out;
  }();
  return bodies[vllm ? 1 : 0];
}

void BM_ReviewWholeGpu(benchmark::State& state) {
  InventorySnapshot snapshot = testing::SnapshotOf(testing::DemoCluster());
  Policy policy;
  policy.workload_detection.enabled = state.range(1) != 0;
  const std::string& body = WholeGpuBody(state.range(0) != 0);
  for (auto _ : state) {
    auto answer = Review(body, snapshot, policy);
    benchmark::DoNotOptimize(answer);
  }
}
BENCHMARK(BM_ReviewWholeGpu)->ArgNames({"vllm", "detect"})->ArgsProduct({{0, 1}, {0, 1}});

// The detector alone over the same two containers: command line split, then the table.
void BM_DetectWorkloadType(benchmark::State& state) {
  const nlohmann::json review = nlohmann::json::parse(WholeGpuBody(state.range(0) != 0));
  const nlohmann::json& c = review["request"]["object"]["spec"]["containers"][0];
  const std::string& image = c["image"].get_ref<const std::string&>();
  WorkloadDetectionPolicy policy;
  for (auto _ : state) {
    std::vector<std::string> words = CommandLineOf(c);
    ContainerLaunch launch{"myapp", image, words};
    auto detected = DetectWorkloadType({&launch, 1}, policy);
    benchmark::DoNotOptimize(detected);
  }
}
BENCHMARK(BM_DetectWorkloadType)->ArgName("vllm")->Arg(0)->Arg(1);

// The decode Review does: the body parsed into simdjson's tape, the request's fields read off it.
void BM_DecodeAdmissionReview(benchmark::State& state) {
  for (auto _ : state) {
    auto request = DecodeAdmissionReview(Body());
    benchmark::DoNotOptimize(request);
  }
}
BENCHMARK(BM_DecodeAdmissionReview);

// BM_DecodeAdmissionReview with the caches evicted before each decode.
void BM_DecodeAdmissionReviewCold(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    EvictCaches(state.range(0), state.range(1) != 0);
    state.ResumeTiming();
    auto request = DecodeAdmissionReview(Body());
    benchmark::DoNotOptimize(request);
  }
}
BENCHMARK(BM_DecodeAdmissionReviewCold)
    ->Iterations(1000)
    ->ArgNames({"evict_kib", "huge"})
    ->Args({65536, 0});

// simdjson's parse alone, the part of the decode Review cannot skip: warm (0) and cold.
void BM_TapeParseCold(benchmark::State& state) {
  simdjson::dom::parser parser;
  std::string padded = Body() + std::string(simdjson::SIMDJSON_PADDING, ' ');
  for (auto _ : state) {
    state.PauseTiming();
    EvictCaches(state.range(0), state.range(1) != 0);
    state.ResumeTiming();
    simdjson::dom::element root;
    auto error = parser.parse(padded.data(), Body().size(), false).get(root);
    benchmark::DoNotOptimize(error);
  }
}
BENCHMARK(BM_TapeParseCold)
    ->Iterations(1000)
    ->ArgNames({"evict_kib", "huge"})
    ->ArgsProduct({{0, 65536}, {0}});

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
