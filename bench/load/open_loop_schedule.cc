#include "bench/load/open_loop_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuadmit::bench {

OpenLoopSchedule::OpenLoopSchedule(double rate, int lanes, int lane)
    : rate_(rate), lanes_(lanes), lane_(lane) {}

std::chrono::nanoseconds OpenLoopSchedule::Due(uint64_t k) const {
  double i = static_cast<double>(k) * lanes_ + lane_;
  // A double holds i * 1e9 / rate to within a nanosecond for the ~1e17 ns of a three-year run.
  return std::chrono::nanoseconds(static_cast<int64_t>(std::floor(i * 1e9 / rate_)));
}

uint64_t OpenLoopSchedule::DueBefore(std::chrono::nanoseconds elapsed) const {
  if (elapsed.count() <= 0) return 0;
  // The inverse of Due() in floating point, then stepped to the exact answer: at most a step or
  // two either way, where the division rounded across a boundary.
  double i = static_cast<double>(elapsed.count()) * rate_ / 1e9;
  double k_real = std::ceil((i - lane_) / lanes_);
  uint64_t k = k_real <= 0 ? 0 : static_cast<uint64_t>(k_real);
  while (k > 0 && Due(k - 1) >= elapsed) --k;
  while (Due(k) < elapsed) ++k;
  return k;
}

uint32_t LatencyFromDueUs(std::chrono::steady_clock::time_point due,
                          std::chrono::steady_clock::time_point done) {
  if (done <= due) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(done - due).count();
  return static_cast<uint32_t>(std::min<int64_t>(us, std::numeric_limits<uint32_t>::max()));
}

}  // namespace gpuadmit::bench
