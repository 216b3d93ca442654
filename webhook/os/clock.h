// Clock: the time seam. Everything in webhook/ that waits or stamps reads the time through it,
// so tests drive time by hand instead of sleeping.
//
// Thread safety: implementations are safe to call from any thread.
#pragma once

#include <chrono>

namespace gpuadmit {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
};

// A SteadyClock for what is given no other (a Logger's hold time).
inline const Clock& DefaultSteadyClock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace gpuadmit
