// The share of the machine's CPU time the hypervisor gave to others while this VM wanted it
// (steal), read from /proc/stat, so gpuadmit_load can say how much of a window's tail was the
// host's: on this project's VM a few percent of steal during a window comes with p99s of
// several milliseconds for any server, nginx included (docs/performance.md).
//
//   std::optional<CpuTicks> before = ReadCpuTicks();
//   ... the measured window ...
//   std::optional<CpuTicks> after = ReadCpuTicks();
//   std::optional<double> pct = StealPercent(*before, *after);
//
// Thread safety: pure functions of /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpuadmit::bench {

// The aggregate "cpu" line of /proc/stat, in USER_HZ ticks: the steal field and the sum of all.
struct CpuTicks {
  uint64_t steal = 0;
  uint64_t total = 0;
};

// The first line of /proc/stat's text ("cpu  user nice system idle iowait irq softirq steal ...");
// nullopt when it is not the aggregate cpu line or has fewer than eight numbers (kernels before
// 2.6.11 had no steal field).
[[nodiscard]] std::optional<CpuTicks> ParseCpuTicks(std::string_view stat);

// ParseCpuTicks of `path` (default /proc/stat); nullopt when it cannot be read.
[[nodiscard]] std::optional<CpuTicks> ReadCpuTicks(const char* path = "/proc/stat");

// Steal between two reads as a percentage of all the CPU time between them; nullopt when no
// tick passed or the counters went backwards.
[[nodiscard]] std::optional<double> StealPercent(const CpuTicks& before, const CpuTicks& after);

}  // namespace gpuadmit::bench
