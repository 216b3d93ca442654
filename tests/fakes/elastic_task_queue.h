// ElasticTaskQueue (for the test fakes built on httplib::Server): cpp-httplib's connection task
// queue, grown on demand. httplib runs one task per TCP connection for the whole keep-alive life of
// that connection, so a fixed pool of N threads lets the N+1st client wait behind another's idle
// connection. This queue starts a thread whenever no idle one is free, up to `max_threads`, and
// keeps it for reuse.
//
//   server.new_task_queue = [] { return new ElasticTaskQueue(256); };
//
// Beyond max_threads, connections queue for the next free thread (the fakes never get there).
//
// Thread safety: enqueue may be called from any thread; shutdown once, after the last enqueue.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuadmit {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  explicit ElasticTaskQueue(size_t max_threads) : max_threads_(max_threads) {}
  ~ElasticTaskQueue() override;

  // Runs `fn` on an idle thread, a new one, or (at max_threads) the next that frees up.
  void enqueue(std::function<void()> fn) override;
  // Runs every queued task to its end, then joins all threads.
  void shutdown() override;

  size_t thread_count();

 private:
  void Work();

  const size_t max_threads_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace gpuadmit
