// EventLoop: one worker thread of the TLS front end. It owns the connections the acceptor hands
// it and drives them from a level-triggered epoll set: readiness runs a connection, a sweep
// every 100 ms applies the timeouts. A request is served on the loop's own thread, start to
// finish, so no connection waits behind another's idle one and nothing is handed between
// threads on the request path. The requests of one epoll batch are all served before their
// answers are written: an answer wakes its client, which would otherwise run between reviews.
//
//   auto loop = EventLoop::Create(host, limits, stopping);
//   std::thread t([&] { loop.value()->Run(); });
//   loop.value()->Adopt(fd, ssl, false);  // from the acceptor
//   stopping = true; loop.value()->Wake(); t.join();
//
// Run returns once `stopping` is set and every connection has closed: busy ones after their
// answer, idle ones after the linger (answering a request that arrives meanwhile), handshakes
// and partial requests at the latest by the read timeout.
//
// Thread safety: Adopt, Wake and connections() from any thread; Run on one.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "webhook/server/tls_connection.h"

namespace gpuadmit {

class EventLoop {
 public:
  static Result<std::unique_ptr<EventLoop>> Create(ConnectionHost& host, ConnectionLimits limits,
                                                   const std::atomic<bool>& stopping);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Takes ownership of an accepted non-blocking socket and its SSL (in accept state).
  void Adopt(int fd, SSL* ssl, bool over_capacity);
  void Wake();
  void Run();
  size_t connections() const { return connections_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::unique_ptr<TlsConnection> connection;
    uint32_t events = 0;  // what epoll waits for now
  };
  struct Incoming {
    int fd;
    SSL* ssl;
    bool over_capacity;
  };

  EventLoop(ConnectionHost& host, ConnectionLimits limits, const std::atomic<bool>& stopping)
      : host_(host), limits_(limits), stopping_(stopping) {}
  void TakeIncoming(TlsConnection::Clock::time_point now, bool stopping);
  void Apply(Entry& entry, TlsConnection::Want want);
  void Close(int fd);
  void Sweep(TlsConnection::Clock::time_point now);
  void StopAll(TlsConnection::Clock::time_point now);

  ConnectionHost& host_;
  const ConnectionLimits limits_;
  const std::atomic<bool>& stopping_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: new connections or Stop
  std::atomic<size_t> connections_{0};
  std::mutex incoming_mu_;
  std::vector<Incoming> incoming_;          // guarded by incoming_mu_
  std::unordered_map<int, Entry> entries_;  // by fd; the loop thread only
};

}  // namespace gpuadmit
