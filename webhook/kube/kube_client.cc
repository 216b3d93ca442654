#include "webhook/kube/kube_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>

#include "webhook/kube/cluster_tls.h"
#include "webhook/kube/server_url.h"
#include "webhook/os/read_file.h"
#include "webhook/tls/openssl_error.h"

namespace gpuadmit {
namespace {

// 10 s to write a request: they are small GETs, so a stall means a dead connection.
constexpr std::chrono::seconds kWriteTimeout{10};
// 64 MiB: a WatchEvent carries one object, and etcd refuses objects over 1.5 MiB; a line this
// long means the stream is not newline-delimited JSON, and buffering it further only eats memory.
constexpr size_t kMaxEventBytes = 64 << 20;

std::string TrimSpace(const std::string& s) {
  const char* kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(kSpace) + 1 - begin);
}

// Holds SIGPIPE blocked on this thread and discards one raised meanwhile. OpenSSL writes with
// write(2), which raises SIGPIPE on a connection the server has closed (a TLS close_notify after
// a drop or a Cancel); that ends any process not ignoring the signal, and only `serve` does.
// SIGPIPE from write(2) goes to the writing thread, so blocking it here is enough.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~ScopedSigpipeBlock() {
    if (sigismember(&previous_, SIGPIPE) == 1) return;  // the caller's to handle
    timespec no_wait{};
    sigtimedwait(&pipe_, nullptr, &no_wait);  // standard signals do not queue: one at most
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }

 private:
  sigset_t pipe_;
  sigset_t previous_;
};

// The trimmed content of a bearer token file; an error names the file.
Result<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Error{"token file " + text.error().message};
  std::string token = TrimSpace(text.value());
  if (token.empty()) return Error{"token file " + path + ": empty"};
  return token;
}

// timeoutSeconds from a watch query, or `fallback`.
std::chrono::seconds WatchTimeout(const std::string& path_and_query,
                                  std::chrono::seconds fallback) {
  const std::string kKey = "timeoutSeconds=";
  size_t at = path_and_query.find("?" + kKey);
  if (at == std::string::npos) at = path_and_query.find("&" + kKey);
  if (at == std::string::npos) return fallback;
  const char* begin = path_and_query.data() + at + 1 + kKey.size();
  long seconds = 0;
  auto [end, ec] = std::from_chars(begin, path_and_query.data() + path_and_query.size(), seconds);
  if (ec != std::errc() || end == begin || seconds <= 0) return fallback;
  return std::chrono::seconds(seconds);
}

}  // namespace

KubeClient::~KubeClient() {
  ScopedSigpipeBlock sigpipe;
  http_.reset();  // closes httplib's descriptor first, with a TLS close_notify
  if (socket_dup_ >= 0) close(socket_dup_);
}

Result<std::unique_ptr<KubeClient>> KubeClient::Create(const KubeConfig& config,
                                                       const KubeClientOptions& options) {
  auto url = ParseServerUrl(config.server);
  if (!url.ok()) return url.error();
  std::unique_ptr<KubeClient> self(new KubeClient());
  self->options_ = options;
  self->base_url_ = config.server;
  self->path_prefix_ = url.value().path_prefix;
  // With tls-server-name, httplib's host is that name (its SNI) and the connection goes to the
  // URL's address through httplib's host-to-address map.
  const std::string& tls_name =
      config.tls_server_name.empty() ? url.value().host : config.tls_server_name;
  self->http_ = std::make_unique<httplib::SSLClient>(tls_name, url.value().port);
  if (!self->http_->is_valid()) return Error{"cannot create a TLS context: " + TakeOpenSslError()};
  if (!config.tls_server_name.empty()) {
    auto address = ResolveOnce(url.value().host);
    if (!address.ok()) return Error{"server " + config.server + ": " + address.error().message};
    self->http_->set_hostname_addr_map({{tls_name, address.value()}});
  }
  auto tls = ClusterTls::Configure(*self->http_->ssl_context(), config, tls_name);
  if (!tls.ok()) return tls.error();
  self->tls_ = std::move(tls).value();
  self->http_->enable_server_certificate_verification(false);  // Tls verifies instead
  self->http_->set_keep_alive(true);
  self->http_->set_tcp_nodelay(true);
  self->http_->set_connection_timeout(options.connect_timeout);
  self->http_->set_write_timeout(kWriteTimeout);
  // httplib's re-encoding would turn an encoded query's '+' (a space) into %2B (a plus).
  self->http_->set_url_encode(false);
  self->http_->set_socket_options([raw = self.get()](int fd) { raw->AdoptSocket(fd); });

  self->token_ = config.token;
  self->token_file_ = config.token_file;
  if (!self->token_file_.empty()) {
    // Without BearerToken's fallback: a token file missing at the start is a wrong configuration.
    auto token = ReadTokenFile(self->token_file_);
    if (!token.ok()) return token.error();
    self->token_ = token.value();
  }
  return self;
}

// The token file is read on every request rather than watched: it is a few hundred bytes in
// the page cache (microseconds, against milliseconds for the request), requests are a few per
// minute once synced (300 List pages for 150,000 pods is ~3 ms of reads), and a rotated token
// (kubelet swaps a symlink) is then used from the very next request with no mtime granularity to
// get wrong. A failed read keeps the last token, as client-go does: it is likely still valid,
// and a 401 says so when it is not.
std::string KubeClient::BearerToken() {
  if (token_file_.empty()) return token_;
  auto token = ReadTokenFile(token_file_);
  if (token.ok()) token_ = std::move(token).value();
  return token_;
}

Result<int> KubeClient::Get(
    const std::string& path_and_query, std::chrono::milliseconds read_timeout,
    const std::function<bool(int status, std::string_view piece)>& on_body) {
  const Error cancelled{"GET " + base_url_ + path_and_query + ": cancelled"};
  if (cancelled_.load()) return cancelled;
  std::string token = BearerToken();
  // identity: a list of 150,000 pods is ~600 MB of JSON; gunzipping it would cost more CPU than
  // the loopback-fast cluster network saves.
  httplib::Headers headers = {
      {"Accept", "application/json"}, {"Accept-Encoding", "identity"}, {"User-Agent", "gpuadmit"}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  http_->set_read_timeout(read_timeout);
  tls_->ClearVerifyError();
  ScopedSigpipeBlock sigpipe;

  int status = 0;
  bool stopped_by_body = false;
  httplib::Result res = http_->Get(
      path_prefix_ + path_and_query, headers,
      [&](const httplib::Response& response) {
        status = response.status;
        return !cancelled_.load();
      },
      [&](const char* data, size_t size) {
        if (cancelled_.load()) return false;
        stopped_by_body = !on_body(status, std::string_view(data, size));
        return !stopped_by_body;
      });
  if (cancelled_.load()) return status != 0 ? Result<int>(status) : cancelled;
  if (res || stopped_by_body) return status;

  std::string what;
  switch (res.error()) {
    case httplib::Error::SSLConnection:
      what = tls_->VerifyFailure();
      if (what.empty()) what = "TLS handshake failed";
      break;
    case httplib::Error::Read:
      what = status == 0 ? "no response: the connection closed or stayed silent past the "
                         : "the connection closed mid-response, or stayed silent past the ";
      what += std::to_string(read_timeout.count()) + " ms read timeout";
      break;
    case httplib::Error::Connection:
    case httplib::Error::ConnectionTimeout:
      what = "cannot connect within " + std::to_string(options_.connect_timeout.count()) + " ms";
      break;
    default:
      what = httplib::to_string(res.error());
  }
  return Error{"GET " + base_url_ + path_and_query + ": " + what};
}

Result<KubeResponse> KubeClient::Send(std::string_view method, const std::string& path,
                                      const std::string& json_body, std::string_view content_type) {
  const std::string what = std::string(method) + " " + base_url_ + path;
  if (method == "GET") return List(path);
  if (method != "POST" && method != "PUT" && method != "PATCH") {
    return Error{what + ": unsupported method"};
  }
  if (cancelled_.load()) return Error{what + ": cancelled"};
  std::string token = BearerToken();
  httplib::Headers headers = {
      {"Accept", "application/json"}, {"Accept-Encoding", "identity"}, {"User-Agent", "gpuadmit"}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  http_->set_read_timeout(options_.list_read_timeout);
  tls_->ClearVerifyError();
  ScopedSigpipeBlock sigpipe;
  const std::string target = path_prefix_ + path;
  const std::string type(content_type);
  httplib::Result res = method == "POST"  ? http_->Post(target, headers, json_body, type)
                        : method == "PUT" ? http_->Put(target, headers, json_body, type)
                                          : http_->Patch(target, headers, json_body, type);
  if (cancelled_.load()) return Error{what + ": cancelled"};
  if (res) return KubeResponse{res->status, std::move(res->body)};
  std::string why = res.error() == httplib::Error::SSLConnection ? tls_->VerifyFailure() : "";
  if (why.empty()) why = httplib::to_string(res.error());
  return Error{what + ": " + why};
}

Result<KubeResponse> KubeClient::List(const std::string& path_and_query) {
  KubeResponse response;
  auto status = Get(path_and_query, options_.list_read_timeout, [&](int, std::string_view piece) {
    response.body.append(piece);
    return true;
  });
  if (!status.ok()) return status.error();
  // A List cut short by Cancel has a status but not its whole body.
  if (cancelled_.load()) return Error{"GET " + base_url_ + path_and_query + ": cancelled"};
  response.status = status.value();
  return response;
}

Result<int> KubeClient::Watch(const std::string& path_and_query,
                              const std::function<bool(std::string_view event)>& on_event) {
  std::string pending;  // the start of an event whose newline has not arrived yet
  bool caller_stopped = false;
  bool too_large = false;
  auto deliver = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return true;
    caller_stopped = !on_event(line);
    return !caller_stopped;
  };
  auto read_timeout =
      WatchTimeout(path_and_query, options_.watch_default_timeout) + options_.watch_read_margin;
  auto status = Get(path_and_query, read_timeout, [&](int http_status, std::string_view piece) {
    if (http_status != 200) return true;  // a Status body, not events
    // Only the new bytes can hold the next newline: scanning from there keeps 1-byte chunks of a
    // large event linear.
    size_t scan_from = pending.size();
    pending.append(piece);
    size_t start = 0;
    for (size_t nl = pending.find('\n', scan_from); nl != std::string::npos;
         nl = pending.find('\n', start)) {
      std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (!deliver(line)) return false;
    }
    pending.erase(0, start);
    too_large = pending.size() > kMaxEventBytes;
    return !too_large;
  });
  if (too_large) {
    return Error{"GET " + base_url_ + path_and_query + ": a watch event over " +
                 std::to_string(kMaxEventBytes >> 20) + " MiB without a newline"};
  }
  if (!status.ok()) return status;
  // The server ended the stream cleanly, so a last line without its newline is whole.
  if (status.value() == 200 && !caller_stopped && !cancelled_.load()) deliver(pending);
  return status;
}

void KubeClient::AdoptSocket(int fd) {
  std::lock_guard<std::mutex> lock(socket_mu_);
  if (socket_dup_ >= 0) close(socket_dup_);  // httplib shut and closed that socket before this
  socket_dup_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  // Not yet connected: the shutdown still sticks, and the handshake's first write fails at once.
  if (cancelled_.load()) shutdown(fd, SHUT_RDWR);
}

// shutdown(2) acts on the socket, not the descriptor: shutting our duplicate ends httplib's
// connect, handshake or read at once, and, unlike httplib's own descriptor, ours cannot be closed
// and reused by another thread under us. httplib's stop() would shut the same socket, but it
// takes the lock that httplib holds while it connects, so it would wait up to connect_timeout.
void KubeClient::Cancel() {
  cancelled_.store(true);
  std::lock_guard<std::mutex> lock(socket_mu_);
  if (socket_dup_ >= 0) shutdown(socket_dup_, SHUT_RDWR);
}

}  // namespace gpuadmit
