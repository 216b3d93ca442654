#include "tests/fakes/elastic_task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace gpuadmit {
namespace {

TEST(ElasticTaskQueue, EveryBlockedTaskGetsItsOwnThreadUpToTheMaximum) {
  ElasticTaskQueue queue(64);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  // 40 tasks that hold their thread, as kept-alive connections do: all must start at once.
  for (int i = 0; i < 40; ++i) {
    queue.enqueue([&] {
      started.fetch_add(1);
      released.wait();
    });
  }
  while (started.load() < 40) std::this_thread::yield();
  EXPECT_EQ(queue.thread_count(), 40u);
  release.set_value();
  queue.shutdown();
}

TEST(ElasticTaskQueue, IdleThreadsAreReusedAndShutdownRunsWhatIsQueued) {
  ElasticTaskQueue queue(2);
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) queue.enqueue([&] { done.fetch_add(1); });
  EXPECT_LE(queue.thread_count(), 2u);
  queue.shutdown();
  EXPECT_EQ(done.load(), 100);
}

}  // namespace
}  // namespace gpuadmit
