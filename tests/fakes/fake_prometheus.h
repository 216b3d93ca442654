// FakePrometheus: Prometheus' instant query API (GET /api/v1/query) on 127.0.0.1, for tests of
// gpuadmit's GPU metrics under faults. Each query names one DCGM metric, as gpuadmit's
// aggregated queries do ("max by (...) (DCGM_FI_DEV_GPU_UTIL)"), and is answered with every GPU
// given a value for that metric, labelled Hostname and gpu as dcgm-exporter labels them.
// Faults: down (Stop: connections refused) and up again on the same port (Restart); held (a slow
// Prometheus: queries wait, unanswered, until Release).
//
//   FakePrometheus prometheus;
//   prometheus.SetGpu("gpu-a", 0, {{"DCGM_FI_DEV_GPU_UTIL", 97}});
//   auto reader = MakePrometheusReader(prometheus.url());
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace httplib {
class Server;
}

namespace gpuadmit::testing {

class FakePrometheus {
 public:
  FakePrometheus();  // serving, on a free port
  ~FakePrometheus();
  FakePrometheus(const FakePrometheus&) = delete;
  FakePrometheus& operator=(const FakePrometheus&) = delete;

  std::string url() const;  // "http://127.0.0.1:PORT"

  // GPU `gpu` of `host` now reads `values` (DCGM metric name -> value); replaces what it had.
  void SetGpu(const std::string& host, int gpu, std::map<std::string, double> values);

  // From now on queries wait, unanswered, until Release (or Stop).
  void Hold();
  void Release();
  // True once `count` queries are waiting at the same time, within `timeout`.
  bool WaitForHeld(size_t count, std::chrono::milliseconds timeout);
  size_t queries_answered() const;

  // Stops serving: connections to the port are refused. Held queries are let go first.
  void Stop();
  // Serves again on the same port, with the same GPUs. Throws if the port was taken meanwhile.
  void Restart();

 private:
  void Listen(int port);                               // 0: any free port
  std::string Answer(const std::string& query) const;  // mu_ held

  std::unique_ptr<httplib::Server> server_;
  std::thread serving_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::pair<std::string, int>, std::map<std::string, double>> gpus_;
  bool held_ = false;
  bool stopping_ = false;
  size_t waiting_ = 0;
  size_t answered_ = 0;
};

}  // namespace gpuadmit::testing
