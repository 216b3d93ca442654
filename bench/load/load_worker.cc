#include "bench/load/load_worker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace gpuadmit::bench {
namespace {

// How long a worker waits on epoll at most, so that it sees a change of phase soon.
constexpr auto kPoll = std::chrono::milliseconds(10);

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

}  // namespace

Worker::Worker(const Options& o, SSL_CTX* ctx, const std::string& request, int connections,
               int lane, int lanes, Shared& shared)
    : o_(o),
      ctx_(ctx),
      request_(request),
      shared_(shared),
      connections_(connections),
      open_loop_(o.rate > 0),
      schedule_(o.rate > 0 ? o.rate : 1, lanes, lane) {}

ThreadResult Worker::Run() {
  // Open loop: a send wakes from epoll at its due time; the default 50 us timer slack would make
  // every send up to 50 us late, and that lateness counts in its latency.
  if (open_loop_) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  for (auto& c : connections_) Open(c);
  std::vector<epoll_event> events(256);
  bool started = false;
  while (true) {
    Phase phase = shared_.phase.load(std::memory_order_acquire);
    if (phase == Phase::kStop) break;
    if (phase != Phase::kConnect && !started) {  // the warm-up starts
      started = true;
      if (open_loop_) {
        StartSchedule();
      } else {
        for (auto& c : connections_) {
          if (c.handshaken && !c.dead) Send(c, Clock::now());
        }
      }
    }
    Clock::duration wait = kPoll;
    if (open_loop_ && started) {
      Clock::time_point now = Clock::now();
      Dispatch(now);
      wait = NextWait(now);
    }
    int n = Wait(events, wait);
    for (int i = 0; i < n; ++i) Ready(*static_cast<Connection*>(events[i].data.ptr), started);
    CheckTimeouts();
    if (open_loop_ && started && !drained_ && Drained()) {
      drained_ = true;
      shared_.drained.fetch_add(1);
    }
  }
  for (auto& c : connections_) {
    SSL_free(c.ssl);
    if (c.fd >= 0) close(c.fd);
  }
  close(epoll_);
  return std::move(result_);
}

int Worker::Wait(std::vector<epoll_event>& events, Clock::duration wait) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  int n = epoll_pwait2(epoll_, events.data(), static_cast<int>(events.size()), &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {  // Linux before 5.11: whole milliseconds, rounded up
    n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()),
                   static_cast<int>((ns + 999999) / 1000000));
  }
  return n;
}

void Worker::Open(Connection& c) {
  c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o_.port));
  inet_pton(AF_INET, o_.host.c_str(), &addr.sin_addr);
  if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
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

void Worker::Fail(Connection& c, uint64_t& counter) {
  ++counter;
  if (!c.handshaken) shared_.failed.fetch_add(1);
  c.dead = true;
  c.sending = false;
  if (c.fd >= 0) epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
}

void Worker::Want(Connection& c, uint32_t events) {
  if (events == c.events) return;
  c.events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &c;
  epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
}

void Worker::Ready(Connection& c, bool started) {
  if (c.dead) return;
  if (!c.handshaken) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.handshaken = true;
      shared_.connected.fetch_add(1);
      Want(c, EPOLLIN);
      if (open_loop_) {
        free_.push_back(&c);
        if (started) Dispatch(Clock::now());
      } else if (started) {
        Send(c, Clock::now());
      }
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

// `origin`: what the latency is counted from (closed loop: now; open loop: the due time).
void Worker::Send(Connection& c, Clock::time_point origin) {
  c.sending = true;
  c.written = 0;
  c.sent_at = origin;
  Write(c);
}

void Worker::Write(Connection& c) {
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

void Worker::Read(Connection& c) {
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
  Record(c, now, whole, status);
  c.in.erase(0, static_cast<size_t>(whole));
  c.sending = false;
  if (open_loop_) {
    free_.push_back(&c);
    Dispatch(now);
  } else {
    Send(c, now);
  }
}

void Worker::Record(const Connection& c, Clock::time_point now, long whole, int status) {
  bool counted;
  if (open_loop_) {
    // Every request due within the window counts, however late its answer (up to the timeout):
    // the worker keeps reading after the window until they are all in.
    counted = c.in_window;
  } else {
    // measure_from and measure_until are written before the phase turns to kMeasure.
    counted = shared_.phase.load(std::memory_order_acquire) == Phase::kMeasure &&
              c.sent_at >= shared_.measure_from && now <= shared_.measure_until;
  }
  if (!counted) return;
  result_.latencies_us.push_back(LatencyFromDueUs(c.sent_at, now));
  result_.bytes += static_cast<uint64_t>(whole);
  if (status < 200 || status > 299) ++result_.non2xx;
  if (status > 399) ++result_.errors.status;
}

void Worker::CheckTimeouts() {
  Clock::time_point now = Clock::now();
  if (now - last_check_ < std::chrono::milliseconds(100)) return;
  last_check_ = now;
  for (auto& c : connections_) {
    if (!c.dead && c.sending && now - c.sent_at > std::chrono::seconds(o_.timeout_s)) {
      Fail(c, result_.errors.timeout);
    }
  }
}

void Worker::StartSchedule() {
  // Written by main before the phase left kConnect, read after this thread saw it leave.
  start_ = shared_.schedule_start;
  first_k_ = schedule_.DueBefore(shared_.measure_from - start_);
  end_k_ = schedule_.DueBefore(shared_.measure_until - start_);
  result_.scheduled = end_k_ - first_k_;
}

// Sends every request due by `now` while a connection is free. A request that finds none waits
// for the next one freed, its latency still counted from its due time; one that has waited
// longer than the timeout is given up as a timeout.
void Worker::Dispatch(Clock::time_point now) {
  while (next_k_ < end_k_) {
    Clock::time_point due = start_ + schedule_.Due(next_k_);
    if (due > now) return;
    bool in_window = next_k_ >= first_k_;
    if (now - due > std::chrono::seconds(o_.timeout_s)) {
      ++result_.errors.timeout;
      ++next_k_;
      continue;
    }
    Connection* c = TakeFree();
    if (c == nullptr) {
      // Every request due by now is waiting; count each of the window's once.
      uint64_t waiting_end =
          std::min(end_k_, schedule_.DueBefore(now - start_ + Clock::duration(1)));
      uint64_t from = std::max({queued_mark_, next_k_, first_k_});
      if (waiting_end > from) result_.queued += waiting_end - from;
      queued_mark_ = std::max(queued_mark_, waiting_end);
      return;
    }
    if (in_window) result_.send_lag_us.push_back(LatencyFromDueUs(due, Clock::now()));
    c->in_window = in_window;
    ++next_k_;
    Send(*c, due);
  }
}

Connection* Worker::TakeFree() {
  while (!free_.empty()) {
    Connection* c = free_.front();
    free_.pop_front();
    if (!c->dead) return c;
  }
  return nullptr;
}

// Until the next request is due when a connection is free to send it; otherwise until epoll
// brings an answer (a connection freed) or the poll interval ends.
Clock::duration Worker::NextWait(Clock::time_point now) const {
  if (next_k_ >= end_k_ || free_.empty()) return kPoll;
  Clock::duration until = start_ + schedule_.Due(next_k_) - now;
  return std::clamp<Clock::duration>(until, Clock::duration::zero(), kPoll);
}

bool Worker::Drained() const {
  if (next_k_ < end_k_) return false;
  return std::none_of(connections_.begin(), connections_.end(),
                      [](const Connection& c) { return c.sending && !c.dead; });
}

}  // namespace gpuadmit::bench
