#include "webhook/server/tls_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "webhook/server/event_loop.h"
#include "webhook/tls/openssl_error.h"
#include "webhook/tls/serving_certificate.h"

namespace gpuadmit {
namespace {

// Connections past the cap by more than this are closed without a TLS handshake: a flood must
// not cost a handshake each.
constexpr size_t kOverflowAnswered = 64;
// The acceptor rests this long when the process is out of file descriptors, instead of
// spinning on a listener that stays readable.
constexpr int kAcceptPauseMs = 100;

constexpr std::string_view kJson = "application/json";

// Configures the server context: TLS 1.2 and up, the serving certificate (swappable), the client
// certificates that identify the apiserver and the peer replicas.
bool SetUpContext(SSL_CTX& ctx, const ServerOptions& options, ServingCertificate& certificate,
                  const CallerTrust& trust, std::string& error) {
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(&ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read what the socket has in one call, not a record header and then its body.
  SSL_CTX_set_read_ahead(&ctx, 1);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) {
    error = "cannot require TLS 1.2: " + TakeOpenSslError();
    return false;
  }
  if (!certificate.Attach(ctx)) {
    error = options.cert_file + ": cannot install the certificate: " + TakeOpenSslError();
    return false;
  }
  static const unsigned char kSessionContext[] = "gpuadmit";
  SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof kSessionContext - 1);
  return trust.Attach(ctx, error);
}

// A non-blocking listening socket on host:port (port 0: any free one). Sets `port`.
Result<int> Listen(const std::string& host, int port_wanted, int& port) {
  std::string where = host + ":" + std::to_string(port_wanted);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port_wanted);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Error{"cannot bind " + where + ": " + gai_strerror(rc)};
  }
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return Error{"cannot bind " + where + ": " + why};
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

// One worker per CPU this process may use: the affinity mask (a cpuset, Kubernetes' static CPU
// manager), capped by a cgroup v2 CPU quota ("200000 100000" in cpu.max is two CPUs). A pod
// limited to 2 CPUs on a 64-core node then runs 2 loops, not 64.
unsigned DefaultWorkers() {
  cpu_set_t set;
  unsigned cpus = sched_getaffinity(0, sizeof set, &set) == 0
                      ? static_cast<unsigned>(CPU_COUNT(&set))
                      : std::thread::hardware_concurrency();
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long period = 0;
  if (cpu_max >> quota >> period && quota != "max" && period > 0) {
    long q = std::atol(quota.c_str());
    if (q > 0) cpus = std::min<unsigned>(cpus, static_cast<unsigned>((q + period - 1) / period));
  }
  return std::max(1u, cpus);
}

HttpResponse JsonError(int status, std::string_view reason) {
  return {status, kJson, R"({"error":")" + std::string(reason) + "\"}", {}, false};
}

}  // namespace

TlsServer::TlsServer(AdmissionHandler& handler, Metrics& metrics, Logger& log)
    : handler_(handler), metrics_(metrics), log_(log) {}

TlsServer::~TlsServer() {
  loops_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

std::optional<std::string> TlsServer::ReloadCertificate() {
  return certificate_->Reload(cert_file_, key_file_);
}

std::string TlsServer::CertificateNotAfter() const { return certificate_->current()->NotAfter(); }

int64_t TlsServer::CertificateNotAfterUnix() const {
  return certificate_->current()->NotAfterUnix();
}

Result<std::unique_ptr<TlsServer>> TlsServer::Create(const ServerOptions& options,
                                                     AdmissionHandler& handler, Metrics& metrics,
                                                     Logger& log) {
  // OpenSSL writes with write(2): a peer that closes mid-answer must cost an EPIPE, not the
  // process.
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TlsServer> self(new TlsServer(handler, metrics, log));
  auto pair = LoadCertifiedKey(options.cert_file, options.key_file);
  if (!pair.ok()) return pair.error();
  self->cert_file_ = options.cert_file;
  self->key_file_ = options.key_file;
  self->certificate_ = std::make_unique<ServingCertificate>(std::move(pair).value());
  auto trust = CallerTrust::Load({options.client_ca_file, options.client_name,
                                  options.peer_ca_file, options.peer_name});
  if (!trust.ok()) return trust.error();
  self->trust_ = std::move(trust).value();
  self->ctx_.reset(SSL_CTX_new(TLS_server_method()));
  if (!self->ctx_) return Error{"cannot create the TLS context: " + TakeOpenSslError()};
  std::string error;
  if (!SetUpContext(*self->ctx_, options, *self->certificate_, *self->trust_, error)) {
    return Error{error};
  }
  self->max_connections_ = options.max_connections;

  ConnectionLimits limits{std::chrono::seconds(options.idle_timeout_seconds),
                          std::chrono::seconds(options.read_timeout_seconds),
                          std::chrono::seconds(options.write_timeout_seconds),
                          std::chrono::milliseconds(options.linger_after_stop_ms)};
  unsigned workers = options.worker_threads;
  if (workers == 0) workers = DefaultWorkers();
  for (unsigned i = 0; i < workers; ++i) {
    auto loop = EventLoop::Create(*self, limits, self->stopping_);
    if (!loop.ok()) return loop.error();
    self->loops_.push_back(std::move(loop).value());
  }
  self->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (self->stop_fd_ < 0)
    return Error{std::string("cannot create an eventfd: ") + std::strerror(errno)};
  auto fd = Listen(options.host, options.port, self->port_);
  if (!fd.ok()) return fd.error();
  self->listen_fd_ = fd.value();
  return self;
}

HttpResponse TlsServer::Serve(const RequestHead& head, std::string_view body, bool over_capacity,
                              const Caller& caller) {
  HttpResponse r = Route(head, body, over_capacity, caller);
  // Stopping: this answer is the connection's last, whichever loop noticed the stop first.
  if (stopping_.load(std::memory_order_relaxed)) r.close = true;
  return r;
}

HttpResponse TlsServer::Route(const RequestHead& head, std::string_view body, bool over_capacity,
                              const Caller& caller) {
  if (over_capacity) {
    metrics_.Inc(Counter::kOverCapacity);
    HttpResponse r = JsonError(503, "connection limit reached; retry");
    r.extra_headers = "Retry-After: 1\r\n";
    return r;
  }
  if (head.content_length > kMaxReviewBody) {
    metrics_.Inc(Counter::kPayloadTooLarge);
    return JsonError(413, "body larger than 7 MiB");
  }
  bool get = head.method == "GET";
  if (head.path == "/mutate") {
    if (head.method != "POST") {
      HttpResponse r = JsonError(405, "use POST");
      r.extra_headers = "Allow: POST\r\n";
      return r;
    }
    return Mutate(head, body, caller);
  }
  if (IsProbePath(head.path)) {
    if (!get) {
      HttpResponse r = JsonError(405, "use GET");
      r.extra_headers = "Allow: GET\r\n";
      return r;
    }
    ProbeAnswer a = AnswerProbe(head.path, !stopping_.load() && handler_.Ready(), metrics_);
    return {a.status, a.content_type, std::move(a.body), {}, false};
  }
  if (pages_.Serves(head.path)) {
    if (!get) {
      HttpResponse r = JsonError(405, "use GET");
      r.extra_headers = "Allow: GET\r\n";
      return r;
    }
    try {
      WebPage page = pages_.answer(head.path, head.query);
      return {page.status, page.content_type, std::move(page.body), page.extra_headers, false};
    } catch (const std::exception& e) {
      metrics_.Inc(Counter::kHandlerPanics);
      log_.Error("page failed", {{"path", std::string(head.path)}, {"error", e.what()}});
      return JsonError(500, "internal error");
    }
  }
  return JsonError(404, "not found");
}

HttpResponse TlsServer::Mutate(const RequestHead& head, std::string_view body,
                               const Caller& caller) {
  // Another replica's mark is taken only from a peer; from anyone else it is counted and the
  // review is handled as if it came unmarked.
  bool marked = !head.forwarded.empty();
  if (marked && !caller.peer) metrics_.Inc(Counter::kForwardMarkIgnored);
  bool forwarded = marked && caller.peer;
  std::string_view scope = forwarded ? ScopeOfForwarded(head.forwarded) : caller.scope;
  try {
    if (review_route_) {
      if (std::optional<HandlerAnswer> a =
              review_route_(head.content_type, body, forwarded, scope)) {
        return {a->status, a->content_type, std::move(a->body), {}, false};
      }
    }
    HandlerAnswer a = handler_.Handle(head.content_type, body, 1, scope);
    return {a.status, a.content_type, std::move(a.body), {}, false};
  } catch (const std::exception& e) {  // the handler answers its own failures; this is a bug
    metrics_.Inc(Counter::kHandlerPanics);
    log_.Error("route failed", {{"error", e.what()}});
    return JsonError(500, "internal error");
  }
}

void TlsServer::BusyChanged(bool busy) {
  if (busy) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (stopping_.load(std::memory_order_relaxed)) {  // only Drain, after Stop, reads it
    last_request_end_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

void TlsServer::Admit(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  size_t open = 0;
  EventLoop* least = loops_.front().get();
  for (const auto& loop : loops_) {
    open += loop->connections();
    if (loop->connections() < least->connections()) least = loop.get();
  }
  if (open >= max_connections_ + kOverflowAnswered) {
    metrics_.Inc(Counter::kOverCapacity);
    close(fd);
    return;
  }
  SSL* ssl = SSL_new(ctx_.get());
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    log_.Error("cannot set up TLS for a connection", {{"error", TakeOpenSslError()}});
    SSL_free(ssl);
    close(fd);
    return;
  }
  SSL_set_accept_state(ssl);
  least->Adopt(fd, ssl, /*over_capacity=*/open >= max_connections_);
}

void TlsServer::Accept() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  while (!stopping_.load()) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    while (true) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        Admit(fd);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {  // EMFILE, ENFILE, ENOBUFS: rest a while
        log_.Warn("cannot accept a connection", {{"error", std::strerror(errno)}});
        poll(&fds[1], 1, kAcceptPauseMs);  // Stop still ends the rest at once
      }
      break;
    }
  }
  close(listen_fd_);  // connections still in the backlog are refused
  listen_fd_ = -1;
}

void TlsServer::Run() {
  log_.Info("serving",
            {{"port", std::to_string(port_)}, {"workers", std::to_string(loops_.size())}});
  std::vector<std::thread> workers;
  for (auto& loop : loops_) workers.emplace_back([&loop] { loop->Run(); });
  Accept();
  for (auto& loop : loops_) loop->Wake();
  for (std::thread& t : workers) t.join();
}

void TlsServer::Stop() {
  if (stopping_.exchange(true)) return;
  log_.Info("stopping: readiness off, finishing in-flight requests");
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof one);
  for (auto& loop : loops_) loop->Wake();
}

void ReloadServingCertificate(TlsServer& server, Metrics& metrics, Logger& log) {
  if (auto error = server.ReloadCertificate()) {
    metrics.Inc(Counter::kCertReloadFailures);
    log.Warn("serving certificate reload refused; keeping the current pair", {{"error", *error}});
    return;
  }
  metrics.Inc(Counter::kCertReloads);
  metrics.SetCertificateExpiry(server.CertificateNotAfterUnix());
  log.Info("serving certificate reloaded", {{"notAfter", server.CertificateNotAfter()}});
}

bool TlsServer::Drain(std::chrono::milliseconds settle,
                      std::chrono::steady_clock::time_point deadline) {
  using Steady = std::chrono::steady_clock;
  // Polling at 10 ms is far below the settle period and costs nothing while shutting down.
  constexpr auto kPoll = std::chrono::milliseconds(10);
  Steady::time_point quiet_since = Steady::now();
  while (Steady::now() < deadline) {
    if (in_flight_.load() > 0) {
      quiet_since = Steady::now();
    } else {
      Steady::time_point last_end{Steady::duration(last_request_end_ns_.load())};
      if (last_end > quiet_since) quiet_since = last_end;
      if (Steady::now() - quiet_since >= settle) return true;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return in_flight_.load() == 0;
}

}  // namespace gpuadmit
