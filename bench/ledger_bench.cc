// The reservation ledger with many reservations live: what one admission's commit costs (it
// first expires what is due) and one pod's release, at 0 to 100,000 reservations that have not
// expired. A cluster admitting 5,000 GPU pods a second holds tens of thousands under a 30 s TTL
// when its pods arrive late.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/inventory/reservation_ledger.h"

namespace gpuadmit {
namespace {

using std::chrono::seconds;
using TimePoint = ReservationLedger::TimePoint;

constexpr std::string_view kProfile = "nvidia.com/mig-1g.10gb";

std::vector<Claim> OneDevice(int64_t node) {
  return {{"gpu-node-" + std::to_string(node % 5000), std::string(kProfile), 1, 1 << 20}};
}

// `live` reservations, committed a millisecond apart, none of them due before `t0 + 30 s`.
void Fill(ReservationLedger& ledger, int64_t live, TimePoint t0) {
  for (int64_t i = 0; i < live; ++i) {
    std::string key = "uid-" + std::to_string(i);
    ledger.Commit(key, "ns/" + key, OneDevice(i), t0 + std::chrono::milliseconds(i % 1000));
  }
}

void BM_LedgerCommitAndRelease(benchmark::State& state) {
  ReservationLedger ledger(seconds(30));
  TimePoint t0;
  Fill(ledger, state.range(0), t0);
  const std::string key = "uid-new", owner = "ns/uid-new";
  const std::vector<Claim> claims = OneDevice(7);
  TimePoint now = t0 + seconds(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ledger.Commit(key, owner, claims, now));
    ledger.Release(key);
  }
  if (ledger.size() != static_cast<size_t>(state.range(0))) state.SkipWithError("lost an entry");
}
BENCHMARK(BM_LedgerCommitAndRelease)->ArgName("live")->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000);

}  // namespace
}  // namespace gpuadmit
