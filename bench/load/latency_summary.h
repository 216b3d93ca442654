// The figures gpuadmit_load reports of a set of latencies: exact nearest-rank percentiles over
// every latency kept (no histogram buckets; a 10 s run at tens of thousands of requests a second
// keeps a few MB), the max, mean and standard deviation.
//
//   LatencySummary s = SummarizeLatencies(std::move(latencies_us));
//   s.p999;  // the 99.9th percentile, in the latencies' unit
//
// Pure arithmetic; no shared state.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuadmit::bench {

struct LatencySummary {
  uint64_t count = 0;
  uint64_t p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  double mean = 0, stdev = 0;  // stdev: the sample standard deviation (n - 1)
};

// Sorts `values` and summarises them; all zero when empty.
[[nodiscard]] LatencySummary SummarizeLatencies(std::vector<uint32_t> values);

// The nearest-rank p-th percentile (0 < p <= 100) of ascending `sorted`: the smallest value
// with at least p% of the values at or below it; 0 when empty.
[[nodiscard]] uint64_t Percentile(const std::vector<uint32_t>& sorted, double p);

}  // namespace gpuadmit::bench
