// One thread of gpuadmit_load: its share of the connections, opened and handshaken on its own
// epoll set, then driven either closed loop (each connection sends again as soon as its answer
// is read) or open loop (Options::rate > 0: requests go out on the thread's lane of an
// OpenLoopSchedule, each on whichever connection is free, and count from their due time).
//
//   Shared shared;
//   Worker w(options, ctx, request, /*connections=*/32, /*lane=*/0, /*lanes=*/2, shared);
//   ThreadResult r = w.Run();  // on its own thread; returns once shared.phase is kStop
//
// Thread safety: a Worker is used by the one thread that calls Run(). It shares only `Shared`
// with main and the other workers: the atomics, and the time points main writes before it
// moves the phase on (release) and the workers read after they see the new phase (acquire).
#pragma once

#include <openssl/ssl.h>
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "bench/load/load_options.h"
#include "bench/load/open_loop_schedule.h"

namespace gpuadmit::bench {

using Clock = std::chrono::steady_clock;

// kConnect: open and handshake. kWarmup: send, do not count. kMeasure: count (closed loop: the
// answers complete within the window; open loop: the requests due within it). kStop: close.
enum class Phase { kConnect, kWarmup, kMeasure, kStop };

struct Errors {
  uint64_t connect = 0, read = 0, write = 0, status = 0, timeout = 0;
};

struct Shared {
  std::atomic<Phase> phase{Phase::kConnect};
  std::atomic<int> connected{0};  // connections whose handshake finished
  std::atomic<int> failed{0};     // connections that could not be opened
  std::atomic<int> drained{0};    // open loop: workers done with every request of the window
  // Closed loop: written before the phase turns to kMeasure. Open loop: all three written before
  // it leaves kConnect, since the schedule fixes the window in advance.
  Clock::time_point schedule_start;  // open loop: when request 0 is due
  Clock::time_point measure_from;
  Clock::time_point measure_until;
};

struct ThreadResult {
  std::vector<uint32_t> latencies_us;
  uint64_t bytes = 0;
  uint64_t non2xx = 0;
  Errors errors;
  // Open loop only, of the requests due within the window:
  uint64_t scheduled = 0;             // how many were due
  uint64_t queued = 0;                // how many found no free connection when due
  std::vector<uint32_t> send_lag_us;  // from the due time to the first write
};

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  bool handshaken = false;
  bool dead = false;
  bool sending = false;    // a request is (partly) written, its answer not read whole
  bool in_window = false;  // open loop: the request on the way was due within the window
  uint32_t events = 0;     // what epoll waits for
  size_t written = 0;
  Clock::time_point sent_at;  // closed loop: when written; open loop: when due
  std::string in;
};

class Worker {
 public:
  // `connections` connections to o.host:o.port; in open loop, lane `lane` of `lanes`.
  Worker(const Options& o, SSL_CTX* ctx, const std::string& request, int connections, int lane,
         int lanes, Shared& shared);

  // Opens the connections, sends while the phase says so, and returns what it measured once the
  // phase is kStop (the connections closed).
  ThreadResult Run();

 private:
  void Open(Connection& c);
  void Fail(Connection& c, uint64_t& counter);
  void Want(Connection& c, uint32_t events);
  void Ready(Connection& c, bool started);
  void Send(Connection& c, Clock::time_point origin);
  void Write(Connection& c);
  void Read(Connection& c);
  void Record(const Connection& c, Clock::time_point now, long whole, int status);
  void CheckTimeouts();
  // Open loop.
  void StartSchedule();
  void Dispatch(Clock::time_point now);
  Connection* TakeFree();
  Clock::duration NextWait(Clock::time_point now) const;
  bool Drained() const;
  int Wait(std::vector<epoll_event>& events, Clock::duration wait);

  const Options& o_;
  SSL_CTX* ctx_;
  const std::string& request_;
  Shared& shared_;
  std::vector<Connection> connections_;  // sized once: epoll holds pointers into it
  int epoll_ = -1;
  Clock::time_point last_check_;  // of the timeouts, every 100 ms
  ThreadResult result_;

  bool open_loop_;
  OpenLoopSchedule schedule_;
  Clock::time_point start_;   // Shared::schedule_start, read once the phase moves on
  uint64_t first_k_ = 0;      // the lane's first request due within the window
  uint64_t end_k_ = 0;        // and the first due after it: the lane sends [0, end_k_)
  uint64_t next_k_ = 0;       // the next request to send (earlier ones sent or given up)
  uint64_t queued_mark_ = 0;  // requests before this one are counted in `queued` already
  bool drained_ = false;
  // Idle connections, the longest idle first: requests take turns over every connection, so over
  // every server worker the connections were accepted by. Most-recently-used first (Go's
  // HTTP/1.1 pool) would send nearly all of them down the one or two connections freed last,
  // and which server worker holds those is the luck of the accept.
  std::deque<Connection*> free_;
};

}  // namespace gpuadmit::bench
