// What a benchmark reads about its own process and machine from /proc and getrusage, and the
// line-based pipe between a benchmark and the helper process it forks.
//
//   double before = CpuSeconds(RUSAGE_SELF);  ...  Memory m = ReadMemory();  // VmRSS, VmHWM
//
// Thread safety: the functions may be called from any thread; a Link from one thread at a time.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace gpuadmit::bench {

// User + system CPU seconds of RUSAGE_SELF (every thread of this process) or RUSAGE_CHILDREN.
double CpuSeconds(int who);

struct Memory {
  double rss_mib = 0;  // VmRSS
  double hwm_mib = 0;  // VmHWM: the peak RSS so far
};
Memory ReadMemory();

// Bytes malloc has handed out and not had back (mallinfo2().uordblks), in MiB.
double HeapInUseMib();

// CPU seconds of each thread of this process, in thread id (creation) order: {tid, seconds}.
std::vector<std::pair<int, double>> ThreadCpu();

// "2 cores, AMD EPYC, load 0.12": the machine, and how busy it was (/proc/loadavg, 1 min).
std::string MachineSummary();

// The command's standard output, trailing whitespace removed; "" when it cannot run.
std::string CommandOutput(const std::string& command);

// One line a message over a pair of pipe descriptors, which it owns.
class Link {
 public:
  Link(int in, int out);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  void Send(const std::string& line);
  std::string Receive();  // "" at end of file

 private:
  FILE* in_;
  FILE* out_;
};

}  // namespace gpuadmit::bench
