// MetricsServer: `serve --metrics-listen ADDR`, a plain-HTTP listener for Prometheus and probes
// beside the TLS one. GET /metrics, /healthz, /readyz and the pages given by SetPages answer as
// they do on --listen; other
// methods on those paths get 405 with Allow, other paths 404. It is cpp-httplib's Server: a few
// scrapes a minute need nothing faster, and the admission path never shares its threads. Each
// connection serves one request.
//
//   auto metrics_server = MetricsServer::Create("0.0.0.0", 9090, metrics, [&] { return ready; });
//   std::thread t([&] { metrics_server.value()->Run(); });
//   ...
//   metrics_server.value()->Stop();  // Run returns
//   t.join();
//
// Thread safety: Create, then Run on one thread; Stop and port from any thread. Stop returns at
// once; Run returns when the requests in flight are answered (5 s read and write timeouts).
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "webhook/server/web_pages.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

class MetricsServer {
 public:
  // Binds host:port (port 0: any free port). The error names the address and why.
  static Result<std::unique_ptr<MetricsServer>> Create(const std::string& host, int port,
                                                       const Metrics& metrics,
                                                       std::function<bool()> ready);

  // GET pages beside the probes (the status page). Call before Run.
  void SetPages(WebPages pages);

  int port() const { return port_; }
  // Serves until Stop. Returns at once when Stop came first.
  void Run();
  void Stop();

 private:
  MetricsServer(const Metrics& metrics, std::function<bool()> ready);

  const Metrics& metrics_;
  std::function<bool()> ready_;
  WebPages pages_;
  httplib::Server http_;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> running_{false};  // inside Run
};

}  // namespace gpuadmit
