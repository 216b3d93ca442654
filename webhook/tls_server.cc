#include "webhook/tls_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <limits>
#include <thread>

#include "webhook/elastic_task_queue.h"
#include "webhook/openssl_error.h"
#include "webhook/serving_certificate.h"

namespace gpuadmit {
namespace {

// Configures the server context: TLS 1.2 and up, the serving certificate (swappable).
bool SetUpContext(SSL_CTX& ctx, const ServerOptions& options, ServingCertificate& certificate,
                  std::string& error) {
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) {
    error = "cannot require TLS 1.2: " + TakeOpenSslError();
    return false;
  }
  if (!certificate.Attach(ctx)) {
    error = options.cert_file + ": cannot install the certificate: " + TakeOpenSslError();
    return false;
  }
  if (!options.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(&ctx, options.client_ca_file.c_str(), nullptr) != 1) {
      error = options.client_ca_file + ": not a usable PEM CA bundle: " + TakeOpenSslError();
      return false;
    }
    // Names the acceptable CAs in the handshake, so a client with several certificates picks.
    SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(options.client_ca_file.c_str()));
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

}  // namespace

// Counts a request as in flight for Drain().
class TlsServer::InFlight {
 public:
  explicit InFlight(TlsServer& s) : s_(s) { s_.in_flight_.fetch_add(1); }
  ~InFlight() {
    s_.last_request_end_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
    s_.in_flight_.fetch_sub(1);
  }

 private:
  TlsServer& s_;
};

TlsServer::~TlsServer() = default;

std::optional<std::string> TlsServer::ReloadCertificate() {
  return certificate_->Reload(cert_file_, key_file_);
}

std::string TlsServer::CertificateNotAfter() const { return certificate_->current()->NotAfter(); }

Result<std::unique_ptr<TlsServer>> TlsServer::Create(const ServerOptions& options,
                                                     AdmissionHandler& handler, Metrics& metrics,
                                                     Logger& log) {
  std::unique_ptr<TlsServer> self(new TlsServer());
  self->log_ = &log;
  auto pair = LoadCertifiedKey(options.cert_file, options.key_file);
  if (!pair.ok()) return pair.error();
  self->cert_file_ = options.cert_file;
  self->key_file_ = options.key_file;
  self->certificate_ = std::make_unique<ServingCertificate>(std::move(pair).value());
  std::string error;
  self->server_ = std::make_unique<httplib::SSLServer>(
      [&](SSL_CTX& ctx) { return SetUpContext(ctx, options, *self->certificate_, error); });
  if (!self->server_->is_valid()) {
    return Error{error.empty() ? "cannot create the TLS context: " + TakeOpenSslError() : error};
  }
  httplib::SSLServer& s = *self->server_;
  size_t max_connections = options.max_connections;
  s.new_task_queue = [max_connections] { return new ElasticTaskQueue(max_connections); };
  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  s.set_keep_alive_timeout(options.idle_timeout_seconds);
  s.set_read_timeout(options.read_timeout_seconds);
  s.set_write_timeout(options.write_timeout_seconds);
  s.set_payload_max_length(kMaxReviewBody);
  self->Route(handler, metrics);

  if (options.port == 0) {
    self->port_ = s.bind_to_any_port(options.host);
    if (self->port_ < 0) return Error{"cannot bind " + options.host + " on any port"};
  } else {
    if (!s.bind_to_port(options.host, options.port)) {
      return Error{"cannot bind " + options.host + ":" + std::to_string(options.port) +
                   " (in use, or not an address of this host)"};
    }
    self->port_ = options.port;
  }
  return self;
}

void TlsServer::Route(AdmissionHandler& handler, Metrics& metrics) {
  httplib::SSLServer& s = *server_;
  // A connection beyond --max-connections: refuse quickly rather than let it wait.
  s.set_pre_routing_handler([&metrics](const httplib::Request&, httplib::Response& res) {
    if (!ElasticTaskQueue::OverCapacity()) return httplib::Server::HandlerResponse::Unhandled;
    metrics.Inc(Counter::kOverCapacity);
    res.status = 503;
    res.set_header("Connection", "close");
    res.set_header("Retry-After", "1");
    res.set_content(R"({"error":"connection limit reached; retry"})", "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.Post("/mutate", [this, &handler](const httplib::Request& req, httplib::Response& res) {
    InFlight guard(*this);
    HandlerAnswer a = handler.Handle(req.get_header_value("Content-Type"), req.body);
    res.status = a.status;
    res.set_content(std::move(a.body), a.content_type.c_str());
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  s.Get("/readyz", [this, &handler](const httplib::Request&, httplib::Response& res) {
    bool ready = !stopping_.load() && handler.Ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : "not ready\n", "text/plain");
  });
  s.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.Render(), "text/plain; version=0.0.4");
  });
  // httplib answers an oversized body itself; give it the same JSON shape as our own errors.
  s.set_error_handler([&metrics](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413) {
      metrics.Inc(Counter::kPayloadTooLarge);
      res.set_content(R"({"error":"body larger than 7 MiB"})", "application/json");
    }
  });
  s.set_exception_handler(
      [this, &metrics](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        metrics.Inc(Counter::kHandlerPanics);
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        log_->Error("route failed", {{"error", what}});
        res.status = 500;
        res.set_content(R"({"error":"internal error"})", "application/json");
      });
}

bool TlsServer::Drain(std::chrono::milliseconds settle,
                      std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  // Polling at 10 ms is far below the settle period and costs nothing while shutting down.
  constexpr auto kPoll = std::chrono::milliseconds(10);
  Clock::time_point quiet_since = Clock::now();
  while (Clock::now() < deadline) {
    if (in_flight_.load() > 0) {
      quiet_since = Clock::now();
    } else {
      Clock::time_point last_end{Clock::duration(last_request_end_ns_.load())};
      if (last_end > quiet_since) quiet_since = last_end;
      if (Clock::now() - quiet_since >= settle) return true;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return in_flight_.load() == 0;
}

void TlsServer::Run() {
  log_->Info("serving", {{"port", std::to_string(port_)}});
  server_->listen_after_bind();
}

void TlsServer::Stop() {
  if (stopping_.exchange(true)) return;
  log_->Info("stopping: readiness off, finishing in-flight requests");
  server_->stop();
}

}  // namespace gpuadmit
