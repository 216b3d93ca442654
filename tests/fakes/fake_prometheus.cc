#include "tests/fakes/fake_prometheus.h"

#include <httplib.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gpuadmit::testing {

FakePrometheus::FakePrometheus() { Listen(0); }

FakePrometheus::~FakePrometheus() { Stop(); }

void FakePrometheus::Listen(int port) {
  server_ = std::make_unique<httplib::Server>();
  // Both: binding the same port again must succeed while the last run's connections linger in
  // TIME_WAIT.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
  });
  server_->set_tcp_nodelay(true);
  server_->Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !held_ || stopping_; });
    --waiting_;
    if (stopping_) {
      res.status = 503;
      return;
    }
    ++answered_;
    res.set_content(Answer(req.get_param_value("query")), "application/json");
  });
  port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1")
                    : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ < 0) throw std::runtime_error("FakePrometheus: cannot bind 127.0.0.1");
  serving_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is lost on a server that has not begun listening; the loop begins within microseconds.
  while (!server_->is_running()) std::this_thread::yield();
}

std::string FakePrometheus::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string FakePrometheus::Answer(const std::string& query) const {
  // The metric is the innermost parenthesised name: "max by (...) (DCGM_FI_DEV_GPU_UTIL)".
  size_t open = query.rfind('(');
  size_t close = query.find(')', open == std::string::npos ? 0 : open);
  std::string metric = open == std::string::npos || close == std::string::npos
                           ? query
                           : query.substr(open + 1, close - open - 1);
  nlohmann::json result = nlohmann::json::array();
  for (const auto& [gpu, values] : gpus_) {
    auto value = values.find(metric);
    if (value == values.end()) continue;
    result.push_back({{"metric", {{"Hostname", gpu.first}, {"gpu", std::to_string(gpu.second)}}},
                      {"value", {1700000000.0, std::to_string(value->second)}}});
  }
  return nlohmann::json{{"status", "success"},
                        {"data", {{"resultType", "vector"}, {"result", result}}}}
      .dump();
}

void FakePrometheus::SetGpu(const std::string& host, int gpu,
                            std::map<std::string, double> values) {
  std::lock_guard<std::mutex> lock(mu_);
  gpus_[{host, gpu}] = std::move(values);
}

void FakePrometheus::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void FakePrometheus::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
  }
  changed_.notify_all();
}

bool FakePrometheus::WaitForHeld(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return held_ && waiting_ >= count; });
}

size_t FakePrometheus::queries_answered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answered_;
}

void FakePrometheus::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  server_->stop();
  if (serving_.joinable()) serving_.join();
}

void FakePrometheus::Restart() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  Listen(port_);
}

}  // namespace gpuadmit::testing
