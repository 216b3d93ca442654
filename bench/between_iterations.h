// What a cold or idle benchmark does between iterations, with the timing paused: the state a
// served request finds the machine in: on a shared VM, 1 ms of idle empties the L2, and a served
// review then costs about its warm time plus an L3 hit for each line it touches.
//
//   state.PauseTiming();
//   EvictCaches(65536, /*huge_pages=*/false);  // or IdleFor(1000): a server's 1 ms between
//   requests state.ResumeTiming();
#pragma once

#include <cstdint>

namespace gpuadmit {

// Writes `kib` KiB of a 64 MiB buffer, so that what the next iteration reads was evicted from
// the caches: 1,024 KiB is twice this machine's L2, 65,536 KiB twice its L3. `huge_pages` writes
// a buffer on 2 MiB pages, which evicts the caches and not the TLB (32 entries instead of
// 16,384): alike timings say misses, not page walks, are the cost.
void EvictCaches(int64_t kib, bool huge_pages);

// Sleeps `us` microseconds, as a server does between requests; nothing for 0 or less.
void IdleFor(int64_t us);

}  // namespace gpuadmit
