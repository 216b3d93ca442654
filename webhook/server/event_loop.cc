#include "webhook/server/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace gpuadmit {
namespace {

using Clock = TlsConnection::Clock;

// 100 ms: timeouts are whole seconds, so they fire within a tenth of one.
constexpr auto kSweepEvery = std::chrono::milliseconds(100);

uint32_t EventsFor(TlsConnection::Want want) {
  return want == TlsConnection::Want::kWrite ? EPOLLOUT : EPOLLIN;
}

}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::Create(ConnectionHost& host, ConnectionLimits limits,
                                                     const std::atomic<bool>& stopping) {
  std::unique_ptr<EventLoop> loop(new EventLoop(host, limits, stopping));
  loop->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  loop->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->epoll_fd_ < 0 || loop->wake_fd_ < 0) {
    return Error{std::string("cannot create an event loop: ") + std::strerror(errno)};
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up, not a connection
  if (epoll_ctl(loop->epoll_fd_, EPOLL_CTL_ADD, loop->wake_fd_, &ev) != 0) {
    return Error{std::string("cannot create an event loop: ") + std::strerror(errno)};
  }
  return loop;
}

EventLoop::~EventLoop() {
  entries_.clear();  // closes every connection
  for (const Incoming& in : incoming_) {
    SSL_free(in.ssl);
    close(in.fd);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

void EventLoop::Adopt(int fd, SSL* ssl, bool over_capacity) {
  connections_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(incoming_mu_);
    incoming_.push_back({fd, ssl, over_capacity});
  }
  Wake();
}

void EventLoop::Wake() {
  uint64_t one = 1;
  // Fails only when the counter would overflow: a wake-up is pending anyway.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void EventLoop::TakeIncoming(Clock::time_point now, bool stopping) {
  std::vector<Incoming> taken;
  {
    std::lock_guard<std::mutex> lock(incoming_mu_);
    taken.swap(incoming_);
  }
  for (const Incoming& in : taken) {
    if (stopping) {  // accepted as the listener closed: nothing was read from it yet
      SSL_free(in.ssl);
      close(in.fd);
      connections_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    Entry& entry = entries_[in.fd];
    entry.connection = std::make_unique<TlsConnection>(in.fd, in.ssl, host_, now, in.over_capacity);
    entry.events = EPOLLIN;  // the ClientHello comes first
    epoll_event ev{};
    ev.events = entry.events;
    ev.data.ptr = &entry;  // unordered_map nodes do not move
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, in.fd, &ev) != 0) Close(in.fd);
  }
}

void EventLoop::Close(int fd) {
  // Closing the socket (in ~TlsConnection) also takes it out of the epoll set.
  if (entries_.erase(fd) > 0) connections_.fetch_sub(1, std::memory_order_relaxed);
}

void EventLoop::Apply(Entry& entry, TlsConnection::Want want) {
  int fd = entry.connection->fd();
  if (want == TlsConnection::Want::kClose) {
    Close(fd);
    return;
  }
  uint32_t events = EventsFor(want);
  if (events == entry.events) return;
  entry.events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &entry;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) Close(fd);
}

void EventLoop::Sweep(Clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.connection->OnTick(now, limits_)) {
      ++it;
    } else {
      it = entries_.erase(it);
      connections_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

void EventLoop::StopAll(Clock::time_point now) {
  for (auto& [fd, entry] : entries_) entry.connection->OnStop(now);
}

void EventLoop::Run() {
  std::array<epoll_event, 128> events;
  std::vector<Entry*> answered;  // served in this batch, answers not written yet
  answered.reserve(events.size());
  bool stopped = false;
  Clock::time_point next_sweep = Clock::now() + kSweepEvery;
  while (!stopped || !entries_.empty()) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_sweep - Clock::now());
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                       static_cast<int>(std::max<int64_t>(0, wait.count()) + 1));
    if (n < 0 && errno != EINTR) break;  // only a bad epoll fd; nothing could be served
    Clock::time_point now = Clock::now();
    bool woken = false;
    for (int i = 0; i < n; ++i) {
      auto* entry = static_cast<Entry*>(events[i].data.ptr);
      if (entry == nullptr) {
        woken = true;
        continue;
      }
      TlsConnection::Want want = entry->connection->OnReady(now);  // once per fd per wait
      if (want == TlsConnection::Want::kFlush) {
        answered.push_back(entry);
      } else {
        Apply(*entry, want);
      }
    }
    // The batch's answers are written after all of its requests are served. Each answer that
    // reaches a client wakes it, and a client on the same CPU then runs first: writing as each
    // review finished would switch to it between reviews, which then found their caches cold.
    for (Entry* entry : answered) Apply(*entry, entry->connection->Flush(now));
    answered.clear();
    // After the batch: closing connections now cannot leave a stale pointer in `events`.
    if (woken) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof count);
    }
    bool stopping = stopping_.load();
    if (woken || stopping) TakeIncoming(now, stopping);
    if (stopping && !stopped) {
      stopped = true;
      StopAll(now);
    }
    if (now >= next_sweep) {
      Sweep(now);
      next_sweep = now + kSweepEvery;
    }
  }
}

}  // namespace gpuadmit
