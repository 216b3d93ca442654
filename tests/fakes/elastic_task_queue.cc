#include "tests/fakes/elastic_task_queue.h"

namespace gpuadmit {

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  tasks_.push_back(std::move(fn));
  if (idle_ >= tasks_.size()) {
    ready_.notify_one();
  } else if (threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  }
}

void ElasticTaskQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.notify_all();
  for (std::thread& t : threads) t.join();
}

size_t ElasticTaskQueue::thread_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void ElasticTaskQueue::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace gpuadmit
