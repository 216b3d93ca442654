#include "bench/load/latency_summary.h"

#include <algorithm>
#include <cmath>

namespace gpuadmit::bench {

uint64_t Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  // p = 99.9 is not exact in binary: without the 1e-6, 99.9 / 100 * 1000 rounds up to rank 1000
  // (the max) instead of 999. The product is below 2^53, so 1e-6 is far above its rounding error
  // and far below the step of 1 between ranks.
  double exact = p * static_cast<double>(sorted.size()) / 100.0;
  size_t rank = static_cast<size_t>(std::ceil(exact - 1e-6));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LatencySummary SummarizeLatencies(std::vector<uint32_t> values) {
  LatencySummary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.p50 = Percentile(values, 50);
  s.p90 = Percentile(values, 90);
  s.p99 = Percentile(values, 99);
  s.p999 = Percentile(values, 99.9);
  s.max = values.back();
  double sum = 0;
  for (uint32_t v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double var = 0;
  for (uint32_t v : values) var += (v - s.mean) * (v - s.mean);
  if (values.size() > 1) var /= static_cast<double>(values.size() - 1);
  s.stdev = std::sqrt(var);
  return s;
}

}  // namespace gpuadmit::bench
