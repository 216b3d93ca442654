#include "bench/between_iterations.h"

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <thread>

namespace gpuadmit {

void EvictCaches(int64_t kib, bool huge_pages) {
  constexpr size_t kHugePage = 2 << 20, kSize = 64 << 20;
  static char* small = static_cast<char*>(std::aligned_alloc(kHugePage, kSize));
  static char* huge = [] {
    auto* p = static_cast<char*>(std::aligned_alloc(kHugePage, kSize));
    madvise(p, kSize, MADV_HUGEPAGE);
    return p;
  }();
  static char round = 0;
  ++round;
  char* buffer = huge_pages ? huge : small;
  size_t bytes = std::min(static_cast<size_t>(kib) << 10, kSize);
  for (size_t i = 0; i < bytes; i += 64) buffer[i] = round;
  benchmark::ClobberMemory();
}

void IdleFor(int64_t us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

}  // namespace gpuadmit
