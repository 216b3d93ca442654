#include "webhook/server/metrics_server.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace gpuadmit {
namespace {

// Two threads: Prometheus and a probe at a time. One request per connection (scrapes come
// seconds apart), so no idle connection holds a thread or delays Stop.
constexpr size_t kThreads = 2;
constexpr time_t kTimeoutSeconds = 5;

// SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second process could bind
// the same port and take half of the scrapes instead of failing.
void ReuseAddress(int fd) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
}

}  // namespace

MetricsServer::MetricsServer(const Metrics& metrics, std::function<bool()> ready)
    : metrics_(metrics), ready_(std::move(ready)) {
  http_.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  http_.set_socket_options(ReuseAddress);
  http_.set_keep_alive_max_count(1);
  http_.set_read_timeout(kTimeoutSeconds);
  http_.set_write_timeout(kTimeoutSeconds);
  auto answer = [this](const httplib::Request& req, httplib::Response& res) {
    ProbeAnswer a = AnswerProbe(req.path, ready_(), metrics_);
    res.status = a.status;
    res.set_content(std::move(a.body), std::string(a.content_type));
  };
  auto use_get = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET");
    res.set_content("{\"error\":\"use GET\"}", "application/json");
  };
  for (std::string_view probe : kProbePaths) {
    std::string path(probe);
    http_.Get(path, answer);
    http_.Post(path, use_get);
    http_.Put(path, use_get);
    http_.Patch(path, use_get);
    http_.Delete(path, use_get);
  }
}

void MetricsServer::SetPages(WebPages pages) {
  pages_ = std::move(pages);
  for (std::string_view route : pages_.paths) {
    std::string path(route);
    // httplib matches a route as a regular expression: the dots must be literal.
    std::string pattern;
    for (char c : path) {
      if (c == '.') pattern += '\\';
      pattern += c;
    }
    http_.Get(pattern, [this, path](const httplib::Request& req, httplib::Response& res) {
      // The query as sent: what follows '?' in the request target.
      size_t mark = req.target.find('?');
      std::string_view query = mark == std::string::npos
                                   ? std::string_view()
                                   : std::string_view(req.target).substr(mark + 1);
      WebPage page = pages_.answer(path, query);
      res.status = page.status;
      for (std::string_view headers = page.extra_headers; !headers.empty();) {
        size_t end = headers.find("\r\n");
        std::string_view line = headers.substr(0, end);
        size_t colon = line.find(':');
        if (colon != std::string_view::npos) {
          size_t value = line.find_first_not_of(' ', colon + 1);
          res.set_header(
              std::string(line.substr(0, colon)),
              std::string(line.substr(value == std::string_view::npos ? line.size() : value)));
        }
        headers.remove_prefix(end == std::string_view::npos ? headers.size() : end + 2);
      }
      res.set_content(std::move(page.body), std::string(page.content_type));
    });
    auto use_get = [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_header("Allow", "GET");
      res.set_content("{\"error\":\"use GET\"}", "application/json");
    };
    http_.Post(pattern, use_get);
    http_.Put(pattern, use_get);
    http_.Patch(pattern, use_get);
    http_.Delete(pattern, use_get);
  }
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Create(const std::string& host, int port,
                                                             const Metrics& metrics,
                                                             std::function<bool()> ready) {
  std::unique_ptr<MetricsServer> self(new MetricsServer(metrics, std::move(ready)));
  errno = 0;
  if (port == 0) {
    self->port_ = self->http_.bind_to_any_port(host);
  } else if (self->http_.bind_to_port(host, port)) {
    self->port_ = port;
  }
  if (self->port_ <= 0) {
    std::string why = errno != 0 ? std::strerror(errno) : "no such address";
    return Error{"cannot bind metrics listener " + host + ":" + std::to_string(port) + ": " + why};
  }
  return self;
}

void MetricsServer::Run() {
  running_.store(true);
  if (!stopped_.load()) http_.listen_after_bind();
  running_.store(false);
}

void MetricsServer::Stop() {
  stopped_.store(true);
  // Run may be past its look at stopped_ but not listening yet, when httplib's stop does
  // nothing: wait until it listens or has returned.
  while (running_.load() && !http_.is_running()) std::this_thread::yield();
  http_.stop();
}

}  // namespace gpuadmit
