// What this machine does to a server's caches between requests. A server at 1,000 req/s sleeps
// about 1 ms before each request; BM_LineAfterIdle says where its working set is when it wakes:
// a pointer chase over `kib` KiB in random line order, timed after `idle_us` of sleep (outside
// the timing), reported as ns per 64-byte line. On the 2-vCPU VM of docs/performance.md a
// 192 KiB set is in L2 without idle (6 ns a line), in L3 after 1 ms (17-25 ns), and in memory
// after 5 ms (120 ns). BM_ClockAfterIdle checks that the clock speed is not what changes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "bench/between_iterations.h"

namespace gpuadmit {
namespace {

constexpr size_t kLine = 64;
constexpr size_t kSlotsPerLine = kLine / sizeof(size_t);

void BM_LineAfterIdle(benchmark::State& state) {
  const size_t lines = static_cast<size_t>(state.range(0)) * 1024 / kLine;
  std::vector<size_t> order(lines);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937(1));
  // next[line * 8] holds the slot of the following line: each load waits on the one before.
  std::vector<size_t> next(lines * kSlotsPerLine);
  for (size_t i = 0; i < lines; ++i) {
    next[order[i] * kSlotsPerLine] = order[(i + 1) % lines] * kSlotsPerLine;
  }
  size_t at = 0;
  for (auto _ : state) {
    state.PauseTiming();
    IdleFor(state.range(1));
    state.ResumeTiming();
    for (size_t i = 0; i < lines; ++i) at = next[at];
    benchmark::DoNotOptimize(at);
  }
  state.counters["ns_per_line"] =
      benchmark::Counter(static_cast<double>(state.iterations() * lines),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LineAfterIdle)
    ->Iterations(300)
    ->ArgNames({"kib", "idle_us"})
    ->ArgsProduct({{192, 1024}, {0, 100, 1000, 5000}})
    ->UseRealTime();

// A chain of dependent multiplications, no memory: its time follows the clock speed alone.
void BM_ClockAfterIdle(benchmark::State& state) {
  uint64_t x = 1;
  for (auto _ : state) {
    state.PauseTiming();
    IdleFor(state.range(0));
    state.ResumeTiming();
    for (int i = 0; i < 40'000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    benchmark::DoNotOptimize(x);
  }
}
BENCHMARK(BM_ClockAfterIdle)->Iterations(300)->ArgName("idle_us")->Arg(0)->Arg(1000)->UseRealTime();

}  // namespace
}  // namespace gpuadmit
