// CountingApi: a KubeApi that passes every call to another and notes, for a benchmark, the bytes
// and requests its Lists read, when its watch's first event arrived, and when the Nth event had
// been handled by the caller (a reflector applies each event inside the callback, so that is when
// the Nth event was applied).
//
//   CountingApi pods(*client);  pods.ExpectEvents(200000);  ... pods.WaitForEvents(limit, t0, t1);
//
// Thread safety: List and Watch from one thread (the reflector's); ExpectEvents before the events
// flow; WaitForEvents and seen from any thread; list_bytes and list_requests once Lists are done.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "webhook/kube/kube_api.h"

namespace gpuadmit::bench {

class CountingApi final : public KubeApi {
 public:
  explicit CountingApi(KubeApi& inner) : inner_(inner) {}

  Result<KubeResponse> List(const std::string& path_and_query) override {
    auto response = inner_.List(path_and_query);
    if (response.ok()) {
      list_bytes_ += response.value().body.size();
      ++list_requests_;
    }
    return response;
  }

  Result<int> Watch(const std::string& path_and_query,
                    const std::function<bool(std::string_view event)>& on_event) override {
    return inner_.Watch(path_and_query, [&](std::string_view line) {
      if (seen_ == 0) first_ = std::chrono::steady_clock::now();
      bool more = on_event(line);
      if (++seen_ == target_) {
        std::lock_guard<std::mutex> lock(mu_);
        last_ = std::chrono::steady_clock::now();
        done_.notify_all();
      }
      return more;
    });
  }

  void Cancel() override { inner_.Cancel(); }

  void ExpectEvents(int64_t count) { target_ = count; }
  // The first event's arrival and the last one's application; false after `limit`.
  bool WaitForEvents(std::chrono::seconds limit, std::chrono::steady_clock::time_point& first,
                     std::chrono::steady_clock::time_point& last) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!done_.wait_for(lock, limit,
                        [&] { return last_ != std::chrono::steady_clock::time_point{}; }))
      return false;
    first = first_;
    last = last_;
    return true;
  }
  int64_t seen() const { return seen_.load(); }
  // Read after the sync: List runs on the reflector's thread.
  size_t list_bytes() const { return list_bytes_; }
  int list_requests() const { return list_requests_; }

 private:
  KubeApi& inner_;
  size_t list_bytes_ = 0;
  int list_requests_ = 0;
  std::atomic<int64_t> seen_{0};
  std::atomic<int64_t> target_{-1};
  std::chrono::steady_clock::time_point first_;  // written before seen_ moves past 0
  std::mutex mu_;
  std::condition_variable done_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace gpuadmit::bench
