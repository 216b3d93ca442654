// TlsServer: the HTTPS front of gpuadmit on cpp-httplib. Routes are thin adapters:
//   POST /mutate   -> AdmissionHandler
//   GET  /healthz  -> 200 while the process serves
//   GET  /readyz   -> 200 once policy and inventory are loaded, 503 from Stop() on
//   GET  /metrics  -> Prometheus text
// Transport settings fixed here: TLS 1.2+, TCP_NODELAY, unlimited requests per kept-alive
// connection, an idle timeout above the apiserver's 90 s, a thread per live connection.
//
//   auto server = TlsServer::Create(options, handler, metrics, log);
//   std::thread t([&] { server.value()->Run(); });
//   ... server.value()->Stop();  t.join();
//
// Thread safety: Create, then Run on one thread; Stop and port from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "webhook/admission_handler.h"
#include "webhook/log.h"
#include "webhook/metrics.h"

namespace httplib {
class SSLServer;
}

namespace gpuadmit {

class ServingCertificate;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443;  // 0: any free port (tests)
  std::string cert_file;
  std::string key_file;
  // When set, clients must present a certificate signed by a CA in this PEM file (for apiservers
  // configured with admission client credentials).
  std::string client_ca_file;
  // 120 s: the apiserver keeps idle connections to webhooks for 90 s; closing first would make
  // it retry on a dead connection.
  int idle_timeout_seconds = 120;
  // 10 s to read a request once it starts: twice the webhook's 5 s timeoutSeconds.
  int read_timeout_seconds = 10;
  int write_timeout_seconds = 10;
  // One thread per live connection. 1024: five apiservers at their default 200 in-flight calls.
  size_t max_connections = 1024;
};

class TlsServer {
 public:
  // Loads the certificate and key and binds the port. Errors say which file is wrong, or why the
  // address cannot be bound.
  static Result<std::unique_ptr<TlsServer>> Create(const ServerOptions& options,
                                                   AdmissionHandler& handler, Metrics& metrics,
                                                   Logger& log);
  ~TlsServer();

  int port() const { return port_; }
  // Serves until Stop(); returns after every in-flight request is answered.
  void Run();
  // Readiness goes false, the listener closes, kept-alive connections close after their
  // current request. Safe to call from a signal-handling thread.
  void Stop();
  // After Stop(): waits until no request has been in flight for `settle` (a request already
  // being read when Stop() came is routed within it), at most until `deadline`. True if drained.
  // Idle kept-alive connections hold no request and do not count.
  bool Drain(std::chrono::milliseconds settle, std::chrono::steady_clock::time_point deadline);

  // Loads the certificate and key files again: new handshakes present the new pair, connections
  // already made keep theirs. A bad pair (unreadable, key mismatch, outside its validity) is
  // refused and the current one stays; the error says why.
  std::optional<std::string> ReloadCertificate();
  std::string CertificateNotAfter() const;  // of the pair presented now

 private:
  class InFlight;

  TlsServer() = default;
  void Route(AdmissionHandler& handler, Metrics& metrics);

  std::unique_ptr<ServingCertificate> certificate_;  // before server_: its context points here
  std::string cert_file_;
  std::string key_file_;
  std::unique_ptr<httplib::SSLServer> server_;
  Logger* log_ = nullptr;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int64_t> last_request_end_ns_{0};  // steady_clock, for Drain's settle period
};

}  // namespace gpuadmit
