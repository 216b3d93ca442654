// gpuadmit_load: a closed-loop HTTPS keep-alive load client for bench/load/run.sh (--client
// gpuadmit_load), for the latency of connections that are already open.
//
// wrk starts its clock while its connections are still making their TLS handshakes: at c=256
// the first request of each connection waits behind up to 256 handshakes on both sides, about
// 100 ms on 2 vCPUs, for nginx as for gpuadmit, and those first requests are the slowest 0.1%
// of an 8 s run. The apiserver keeps its connections to a webhook open (90 s idle), so what it
// sees is the latency on open connections. This client opens and handshakes every connection,
// warms up on them, then measures: each connection sends the request, reads the whole answer,
// and sends it again at once.
//
//   build/bench/gpuadmit_load --url https://127.0.0.1:8443/mutate --body FILE
//       [--connections 64] [--threads 2] [--warmup 1] [--duration 10] [--timeout 2]
//
// Prints one line, the shape of admission.lua's WRK_RESULT so run.sh reads either:
//   LOAD_RESULT {"requests":N,"duration_us":N,"bytes":N,"rps":F,"setup_ms":F,
//                "errors":{"connect":N,"read":N,"write":N,"status":N,"timeout":N,
//                          "non2xx":N,"total":N},
//                "latency_us":{"p50":N,"p90":N,"p99":N,"p999":N,"max":N,"mean":F,"stdev":F}}
// Counted: answers to requests sent within the measured window and complete before it ends.
// Latencies are exact (every one is kept and sorted), in microseconds. A connection that fails,
// or whose answer takes longer than --timeout, counts an error and sends nothing more.
// Exit status: 0 measured, 1 the connections could not all be opened, 2 bad usage.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/load/load_options.h"

namespace gpuadmit::bench {
namespace {

using Clock = std::chrono::steady_clock;

enum class Phase { kConnect, kWarmup, kMeasure, kStop };

struct Errors {
  uint64_t connect = 0, read = 0, write = 0, status = 0, timeout = 0;
};

// What every thread shares: the phase, set by main, and when the measured window opens.
struct Shared {
  std::atomic<Phase> phase{Phase::kConnect};
  std::atomic<int> connected{0};  // connections whose handshake finished
  std::atomic<int> failed{0};     // connections that could not be opened
  Clock::time_point measure_from;
  Clock::time_point measure_until;
};

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  bool handshaken = false;
  bool dead = false;
  bool sending = false;  // a request is (partly) written, its answer not read whole
  uint32_t events = 0;   // what epoll waits for
  size_t written = 0;
  Clock::time_point sent_at;
  std::string in;
};

struct ThreadResult {
  std::vector<uint32_t> latencies_us;
  uint64_t bytes = 0;
  uint64_t non2xx = 0;
  Errors errors;
};

// The length of a whole answer at the front of `in` and its status; 0 while it is incomplete.
// -1: not an HTTP/1.1 answer with a Content-Length.
long AnswerLength(const std::string& in, int& status) {
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  if (in.compare(0, 9, "HTTP/1.1 ") != 0 || in.size() < 12) return -1;
  status = std::atoi(in.c_str() + 9);
  std::string head = in.substr(0, head_end);
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t at = head.find("\r\ncontent-length:");
  if (at == std::string::npos) return -1;
  long length = std::atol(head.c_str() + at + 17);
  long whole = static_cast<long>(head_end + 4) + length;
  return static_cast<long>(in.size()) >= whole ? whole : 0;
}

class Worker {
 public:
  Worker(const Options& o, SSL_CTX* ctx, const std::string& request, int connections,
         Shared& shared)
      : o_(o), ctx_(ctx), request_(request), shared_(shared), connections_(connections) {}

  ThreadResult Run() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    for (auto& c : connections_) Open(c);
    std::vector<epoll_event> events(256);
    bool started = false;
    while (true) {
      Phase phase = shared_.phase.load(std::memory_order_acquire);
      if (phase == Phase::kStop) break;
      if (phase != Phase::kConnect && !started) {  // the warm-up starts: every connection sends
        started = true;
        for (auto& c : connections_) {
          if (c.handshaken && !c.dead) Send(c);
        }
      }
      int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 10);
      for (int i = 0; i < n; ++i) Ready(*static_cast<Connection*>(events[i].data.ptr), started);
      CheckTimeouts();
    }
    for (auto& c : connections_) {
      SSL_free(c.ssl);
      if (c.fd >= 0) close(c.fd);
    }
    close(epoll_);
    return std::move(result_);
  }

 private:
  void Open(Connection& c) {
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(o_.port));
    inet_pton(AF_INET, o_.host.c_str(), &addr.sin_addr);
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
        errno != EINPROGRESS) {
      Fail(c, result_.errors.connect);
      return;
    }
    c.ssl = SSL_new(ctx_);
    SSL_set_fd(c.ssl, c.fd);
    SSL_set_connect_state(c.ssl);
    epoll_event ev{};
    ev.events = c.events = EPOLLIN | EPOLLOUT;
    ev.data.ptr = &c;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &ev);
  }

  void Fail(Connection& c, uint64_t& counter) {
    ++counter;
    if (!c.handshaken) shared_.failed.fetch_add(1);
    c.dead = true;
    if (c.fd >= 0) epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
  }

  void Want(Connection& c, uint32_t events) {
    if (events == c.events) return;
    c.events = events;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = &c;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void Ready(Connection& c, bool started) {
    if (c.dead) return;
    if (!c.handshaken) {
      ERR_clear_error();
      int r = SSL_do_handshake(c.ssl);
      if (r == 1) {
        c.handshaken = true;
        shared_.connected.fetch_add(1);
        Want(c, EPOLLIN);
        if (started) Send(c);
        return;
      }
      int e = SSL_get_error(c.ssl, r);
      if (e == SSL_ERROR_WANT_READ) return Want(c, EPOLLIN);
      if (e == SSL_ERROR_WANT_WRITE) return Want(c, EPOLLOUT);
      return Fail(c, result_.errors.connect);
    }
    if (c.sending && c.written < request_.size()) return Write(c);
    Read(c);
  }

  void Send(Connection& c) {
    c.sending = true;
    c.written = 0;
    c.sent_at = Clock::now();
    Write(c);
  }

  void Write(Connection& c) {
    while (c.written < request_.size()) {
      ERR_clear_error();
      int n = SSL_write(c.ssl, request_.data() + c.written,
                        static_cast<int>(request_.size() - c.written));
      if (n > 0) {
        c.written += static_cast<size_t>(n);
        continue;
      }
      int e = SSL_get_error(c.ssl, n);
      if (e == SSL_ERROR_WANT_WRITE) return Want(c, EPOLLOUT);
      if (e == SSL_ERROR_WANT_READ) return Want(c, EPOLLIN);
      return Fail(c, result_.errors.write);
    }
    Want(c, EPOLLIN);
  }

  void Read(Connection& c) {
    char buffer[16 * 1024];
    while (true) {
      ERR_clear_error();
      int n = SSL_read(c.ssl, buffer, sizeof buffer);
      if (n <= 0) {
        int e = SSL_get_error(c.ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        return Fail(c, result_.errors.read);
      }
      c.in.append(buffer, static_cast<size_t>(n));
    }
    if (!c.sending || c.in.empty()) return;
    int status = 0;
    long whole = AnswerLength(c.in, status);
    if (whole < 0) return Fail(c, result_.errors.read);
    if (whole == 0) return;
    Clock::time_point now = Clock::now();
    // measure_from and measure_until are written before the phase turns to kMeasure.
    if (shared_.phase.load(std::memory_order_acquire) == Phase::kMeasure &&
        c.sent_at >= shared_.measure_from && now <= shared_.measure_until) {
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - c.sent_at).count();
      result_.latencies_us.push_back(static_cast<uint32_t>(us));
      result_.bytes += static_cast<uint64_t>(whole);
      if (status < 200 || status > 299) ++result_.non2xx;
      if (status > 399) ++result_.errors.status;
    }
    c.in.erase(0, static_cast<size_t>(whole));
    Send(c);
  }

  void CheckTimeouts() {
    Clock::time_point now = Clock::now();
    if (now - last_check_ < std::chrono::milliseconds(100)) return;
    last_check_ = now;
    for (auto& c : connections_) {
      if (!c.dead && c.sending && now - c.sent_at > std::chrono::seconds(o_.timeout_s)) {
        Fail(c, result_.errors.timeout);
      }
    }
  }

  const Options& o_;
  SSL_CTX* ctx_;
  const std::string& request_;
  Shared& shared_;
  std::vector<Connection> connections_;  // sized once: epoll holds pointers into it
  int epoll_ = -1;
  Clock::time_point last_check_;  // of the timeouts, every 100 ms
  ThreadResult result_;
};

uint64_t Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

int Main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: gpuadmit_load --url https://IPV4:PORT/PATH --body FILE [--connections N] "
                 "[--threads N] [--warmup S] [--duration S] [--timeout S]\n");
    return 2;
  }
  std::ifstream in(o.body_file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gpuadmit_load: cannot read %s\n", o.body_file.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  std::string request =
      "POST " + o.path + " HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;

  // Loopback only, a throw-away certificate: the client does not verify it (wrk does not
  // either); TLS 1.2 or later, OpenSSL's default ciphers, as wrk.
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);

  Shared shared;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int share = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(o, ctx.get(), request, share, shared));
  }
  std::vector<ThreadResult> results(workers.size());
  std::vector<std::thread> threads;
  auto setup_start = Clock::now();
  for (size_t t = 0; t < workers.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = workers[t]->Run(); });
  }
  auto give_up = setup_start + std::chrono::seconds(30);
  while (shared.connected.load() + shared.failed.load() < o.connections && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double setup_ms = std::chrono::duration<double, std::milli>(Clock::now() - setup_start).count();
  bool all_open = shared.connected.load() == o.connections;
  if (all_open) {
    shared.phase.store(Phase::kWarmup, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::seconds(o.warmup_s));
    shared.measure_from = Clock::now();
    shared.measure_until = shared.measure_from + std::chrono::seconds(o.duration_s);
    shared.phase.store(Phase::kMeasure, std::memory_order_release);
    std::this_thread::sleep_until(shared.measure_until);
  }
  shared.phase.store(Phase::kStop, std::memory_order_release);
  for (auto& t : threads) t.join();
  if (!all_open) {
    std::fprintf(stderr, "gpuadmit_load: %d of %d connections opened within 30 s\n",
                 shared.connected.load(), o.connections);
    return 1;
  }

  std::vector<uint32_t> all;
  Errors e;
  uint64_t bytes = 0, non2xx = 0;
  for (const ThreadResult& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    bytes += r.bytes;
    non2xx += r.non2xx;
    e.connect += r.errors.connect;
    e.read += r.errors.read;
    e.write += r.errors.write;
    e.status += r.errors.status;
    e.timeout += r.errors.timeout;
  }
  std::sort(all.begin(), all.end());
  double mean = 0, var = 0;
  for (uint32_t v : all) mean += v;
  if (!all.empty()) mean /= static_cast<double>(all.size());
  for (uint32_t v : all) var += (v - mean) * (v - mean);
  if (all.size() > 1) var /= static_cast<double>(all.size() - 1);
  uint64_t duration_us = static_cast<uint64_t>(o.duration_s) * 1000000;
  uint64_t total = e.connect + e.read + e.write + e.timeout + non2xx;
  std::printf(
      "LOAD_RESULT {\"requests\":%zu,\"duration_us\":%llu,\"bytes\":%llu,\"rps\":%.1f,"
      "\"setup_ms\":%.1f,\"errors\":{\"connect\":%llu,\"read\":%llu,\"write\":%llu,"
      "\"status\":%llu,\"timeout\":%llu,\"non2xx\":%llu,\"total\":%llu},\"latency_us\":{"
      "\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu,\"mean\":%.1f,"
      "\"stdev\":%.1f}}\n",
      all.size(), static_cast<unsigned long long>(duration_us),
      static_cast<unsigned long long>(bytes),
      static_cast<double>(all.size()) * 1e6 / static_cast<double>(duration_us), setup_ms,
      static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.read),
      static_cast<unsigned long long>(e.write), static_cast<unsigned long long>(e.status),
      static_cast<unsigned long long>(e.timeout), static_cast<unsigned long long>(non2xx),
      static_cast<unsigned long long>(total), static_cast<unsigned long long>(Percentile(all, 50)),
      static_cast<unsigned long long>(Percentile(all, 90)),
      static_cast<unsigned long long>(Percentile(all, 99)),
      static_cast<unsigned long long>(Percentile(all, 99.9)),
      static_cast<unsigned long long>(all.empty() ? 0 : all.back()), mean, std::sqrt(var));
  return 0;
}

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) { return gpuadmit::bench::Main(argc, argv); }
