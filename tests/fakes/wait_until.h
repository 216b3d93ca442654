// WaitUntil: how a test waits for another thread to get somewhere. It asks `done` every
// millisecond until it answers true, for at most `timeout` of real time, and returns its last
// answer: a test asserts on a condition, never on what a pause made likely.
//
//   ASSERT_TRUE(testing::WaitUntil([&] { return inventory.Synced(); }));
//
// Thread safety: `done` is called on the caller's thread only.
#pragma once

#include <chrono>
#include <thread>

namespace gpuadmit::testing {

template <typename Done>
bool WaitUntil(Done done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace gpuadmit::testing
