// The CPU time a set of server processes spent, read from /proc, so gpuadmit_load can say what a
// request cost the server as well as how long it took: on a machine whose CPUs the client and
// the server share, the tail follows the server's CPU per request (docs/performance.md).
//
//   std::optional<uint64_t> before = ProcessesCpuNs(pids);
//   ... the measured window ...
//   std::optional<uint64_t> after = ProcessesCpuNs(pids);
//
// A process's time is the sum over its threads of the first field of
// /proc/PID/task/TID/schedstat: nanoseconds on a CPU, user and system together (Linux keeps it
// when built with CONFIG_SCHED_INFO, as Debian's kernels are). A thread that ends between two
// reads takes its time with it, so this suits servers whose threads live as long as they do.
//
// Thread safety: pure functions of /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace gpuadmit::bench {

// The first field of a schedstat line ("179663539 12305880 683\n" -> 179663539); nullopt when
// it does not start with a number.
[[nodiscard]] std::optional<uint64_t> ParseSchedstatRunNs(std::string_view line);

// The CPU time of every thread of every process in `pids`, in nanoseconds, under `proc_root`
// ("/proc"; a test passes a directory laid out like it); nullopt when a process cannot be read
// or a thread's schedstat does not parse. A thread gone since its directory was listed counts 0.
[[nodiscard]] std::optional<uint64_t> ProcessesCpuNs(const std::vector<int>& pids,
                                                     std::string_view proc_root = "/proc");

}  // namespace gpuadmit::bench
