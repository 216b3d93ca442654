// FakeClock: time that moves only when a test says so.
#pragma once

#include <atomic>
#include <chrono>

#include "webhook/os/clock.h"

namespace gpuadmit::testing {

class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(nanos_.load()));
  }
  void Advance(std::chrono::nanoseconds by) { nanos_.fetch_add(by.count()); }

 private:
  std::atomic<int64_t> nanos_{1};
};

}  // namespace gpuadmit::testing
