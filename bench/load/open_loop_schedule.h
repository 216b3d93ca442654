// The send schedule of gpuadmit_load --rate (open loop): request i of the whole client is due at
// start + i / rate, whatever the answers do. Each thread is one lane and sends the requests
// i = k * lanes + lane (k = 0, 1, ...), so the lanes together keep the total rate exactly, and a
// request's latency is counted from its due time, not from when a connection was free to send it.
//
//   OpenLoopSchedule lane(5000.0, 2, 1);  // 5,000 req/s over 2 threads; this is thread 1
//   lane.Due(0);  // 200 us: request i = 1
//   lane.Due(1);  // 600 us: request i = 3
//
// Pure arithmetic; a value type, safe to copy and to use from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpuadmit::bench {

class OpenLoopSchedule {
 public:
  // rate > 0 requests per second in all; 0 <= lane < lanes.
  OpenLoopSchedule(double rate, int lanes, int lane);

  // When the lane's k-th request is due, counted from the start of the schedule (floored to
  // the nanosecond).
  [[nodiscard]] std::chrono::nanoseconds Due(uint64_t k) const;

  // How many of the lane's requests are due strictly before `elapsed` (0 for elapsed <= 0): the
  // first k not yet due then. Exact against Due().
  [[nodiscard]] uint64_t DueBefore(std::chrono::nanoseconds elapsed) const;

 private:
  double rate_;
  int lanes_;
  int lane_;
};

// The latency of an answer complete at `done` to a request due at `due`, in whole microseconds
// (0 if it came before its due time, which a correct client never lets happen). Counted from
// the due time, so the time a request waited for a free connection, or for a client thread
// that was late, is part of it.
[[nodiscard]] uint32_t LatencyFromDueUs(std::chrono::steady_clock::time_point due,
                                        std::chrono::steady_clock::time_point done);

}  // namespace gpuadmit::bench
