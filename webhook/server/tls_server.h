// TlsServer: the HTTPS front of gpuadmit. Routes are thin adapters:
//   POST /mutate   -> AdmissionHandler
//   GET  /healthz  -> 200 while the process serves
//   GET  /readyz   -> 200 once policy and inventory are loaded, 503 from Stop() on
//   GET  /metrics  -> Prometheus text
//   GET  pages given by SetPages (serve: /status, /status.css, /status.json)
// Event-driven: one acceptor (the thread that calls Run) hands each connection to the worker
// loop with the fewest (webhook/server/event_loop.h), which serves it to the end with non-blocking
// OpenSSL. Transport settings fixed here: TLS 1.2+, TCP_NODELAY, unlimited requests per
// kept-alive connection, an idle timeout above the apiserver's 90 s, read and write timeouts,
// and a connection cap beyond which a new connection is answered 503 at once.
//
//   auto server = TlsServer::Create(options, handler, metrics, log);
//   std::thread t([&] { server.value()->Run(); });
//   ... server.value()->Stop();  t.join();
//
// Thread safety: Create, then Run on one thread; Stop, Drain, ReloadCertificate and port from
// any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/server/tls_connection.h"
#include "webhook/server/web_pages.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"
#include "webhook/tls/caller_trust.h"

namespace gpuadmit {

class EventLoop;
class ServingCertificate;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8443;  // 0: any free port (tests)
  std::string cert_file;
  std::string key_file;
  // When set, clients must present a certificate signed by a CA in this PEM file (for apiservers
  // configured with admission client credentials).
  std::string client_ca_file;
  // With client_ca_file: the name the client's certificate must hold (a DNS subjectAltName, or
  // its common name when it has none), e.g. "kube-apiserver". Empty: any name the CA signed.
  std::string client_name;
  // --leader-elect: the CA of the replicas' certificate and the name it holds. A client that
  // presents such a certificate is a peer: only a peer's Gpuadmit-Forwarded header is honoured.
  std::string peer_ca_file;
  std::string peer_name;
  // 120 s: the apiserver keeps idle connections to webhooks for 90 s; closing first would make
  // it retry on a dead connection.
  int idle_timeout_seconds = 120;
  // 10 s to read a request once it starts: twice the webhook's 5 s timeoutSeconds.
  int read_timeout_seconds = 10;
  int write_timeout_seconds = 10;
  // 1024: five apiservers at their default 200 in-flight calls. Beyond it a new connection is
  // answered 503 (Retry-After: 1); beyond it by 64 more, closed at once.
  size_t max_connections = 1024;
  // After Stop, an idle kept-alive connection still answers one request for this long (then
  // closes): a request the client sent as the server stopped is answered, not reset.
  int linger_after_stop_ms = 1000;
  // Worker loops serving connections; 0: one per CPU the process may use (affinity, cgroup
  // CPU quota).
  unsigned worker_threads = 0;
};

class TlsServer : private ConnectionHost {
 public:
  // Loads the certificate and key and binds the port. Errors say which file is wrong, or why the
  // address cannot be bound.
  static Result<std::unique_ptr<TlsServer>> Create(const ServerOptions& options,
                                                   AdmissionHandler& handler, Metrics& metrics,
                                                   Logger& log);
  ~TlsServer() override;
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;

  int port() const { return port_; }
  // Serves until Stop(); returns once every connection has closed (busy ones after their
  // answer, a request still arriving at the latest by the read timeout).
  void Run();
  // Readiness goes false and the listener closes. Every connection closes after its next answer
  // (which says Connection: close); one that stays idle closes after linger_after_stop_ms.
  // Safe to call from a signal-handling thread.
  void Stop();
  // After Stop(): waits until no connection has been busy with a request (bytes of it read, or
  // its answer not fully written) for `settle`, at most until `deadline`. True if drained.
  bool Drain(std::chrono::milliseconds settle, std::chrono::steady_clock::time_point deadline);

  // Loads the certificate and key files again: new handshakes present the new pair, connections
  // already made keep theirs. A bad pair (unreadable, key mismatch, outside its validity) is
  // refused and the current one stays; the error says why.
  std::optional<std::string> ReloadCertificate();
  std::string CertificateNotAfter() const;  // of the pair presented now
  int64_t CertificateNotAfterUnix() const;  // the same in seconds since the epoch

  // A say on each POST /mutate before the handler: an answer to send instead (the leader's,
  // forwarded), or nullopt to let the handler decide here. `forwarded`: a peer replica
  // forwarded the request (Gpuadmit-Forwarded, honoured from peers only). `scope`: the
  // reservation scope of the review's caller (ReservationScope). Set before Run.
  using ReviewRoute = std::function<std::optional<HandlerAnswer>(
      std::string_view content_type, std::string_view body, bool forwarded,
      std::string_view scope)>;
  void SetReviewRoute(ReviewRoute route) { review_route_ = std::move(route); }
  // GET pages beside the probes (the status page). Set before Run.
  void SetPages(WebPages pages) { pages_ = std::move(pages); }

 private:
  TlsServer(AdmissionHandler& handler, Metrics& metrics, Logger& log);
  Caller Identify(SSL* ssl, int fd) override { return trust_->Identify(ssl, fd); }
  HttpResponse Serve(const RequestHead& head, std::string_view body, bool over_capacity,
                     const Caller& caller) override;
  void BusyChanged(bool busy) override;
  HttpResponse Route(const RequestHead& head, std::string_view body, bool over_capacity,
                     const Caller& caller);
  HttpResponse Mutate(const RequestHead& head, std::string_view body, const Caller& caller);
  void Admit(int fd);
  void Accept();

  AdmissionHandler& handler_;
  ReviewRoute review_route_;
  WebPages pages_;
  Metrics& metrics_;
  Logger& log_;
  std::unique_ptr<ServingCertificate> certificate_;  // before ctx_: the context points here
  std::unique_ptr<CallerTrust> trust_;               // likewise
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx_{nullptr, SSL_CTX_free};
  std::string cert_file_;
  std::string key_file_;
  size_t max_connections_ = 0;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd that wakes the acceptor
  int port_ = 0;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};                // connections busy with a request
  std::atomic<int64_t> last_request_end_ns_{0};  // steady_clock, for Drain's settle period
};

// Loads the server's certificate files again and reports the outcome, as serve does when either
// file changes: gpuadmit_certificate_reloads_total and an info line with the new notAfter, or
// gpuadmit_certificate_reload_failures_total and a warning saying why the current pair stays.
void ReloadServingCertificate(TlsServer& server, Metrics& metrics, Logger& log);

}  // namespace gpuadmit
