// The command line of gpuadmit_load (load_client.cc): where to send what, over how many
// connections and threads, for how long, and whether closed loop (each connection sends again
// as soon as its answer is read) or open loop (--rate: a fixed schedule of send times).
//
//   Options o;
//   if (!ParseOptions(argc, argv, o)) return 2;  // after printing the usage
//
// Thread safety: used from main only.
#pragma once

#include <string>
#include <vector>

namespace gpuadmit::bench {

struct Options {
  std::string host;
  int port = 0;
  std::string path;
  std::string body_file;
  int connections = 64;
  int threads = 2;
  int warmup_s = 1;
  int duration_s = 10;
  int timeout_s = 2;
  double rate = 0;  // requests per second in all, open loop; 0: closed loop
  // --server-pid (repeatable): processes whose CPU time over the measured window is reported.
  std::vector<int> server_pids;
  // --latencies: where to write every latency of the measured window, in microseconds, one a
  // line (for pooling several runs' latencies before taking percentiles); "" for nowhere.
  std::string latencies_file;
};

// Reads argv into `o`; false for bad usage (an unknown flag, a flag without its value, a URL
// that is not https://IPv4:PORT/PATH, a count out of range, a rate that is not a number in
// (0, 1e6], a --server-pid that is not a positive number).
bool ParseOptions(int argc, char** argv, Options& o);

}  // namespace gpuadmit::bench
