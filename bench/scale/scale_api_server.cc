#include "bench/scale/scale_api_server.h"

#include <httplib.h>
#include <sys/resource.h>

#include <chrono>
#include <limits>
#include <stdexcept>

#include "bench/scale/process_probe.h"
#include "tests/fakes/fake_kube_api_server.h"

namespace gpuadmit::bench {

ScaleApiServer::ScaleApiServer(std::string token, ListPages nodes, ListPages pods,
                               std::vector<std::string> pod_watch_blocks)
    : token_("Bearer " + std::move(token)) {
  resources_["nodes"].pages = std::move(nodes);
  resources_["pods"].pages = std::move(pods);
  resources_["pods"].watch_blocks = std::move(pod_watch_blocks);
  for (auto& [name, r] : resources_) {
    for (size_t i = 0; i + 1 < r.pages.bodies.size(); ++i) {
      r.page_after[r.pages.continue_tokens[i]] = i + 1;
    }
  }
  server_ = std::make_unique<httplib::SSLServer>(tls_.cert_file().c_str(), tls_.key_file().c_str());
  if (!server_->is_valid()) throw std::runtime_error("ScaleApiServer: TLS setup failed");
  server_->set_tcp_nodelay(true);
  // An apiserver keeps a client's connection for every page; httplib's default closes it after 5.
  server_->set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  server_->Get(
      R"(/api/v1/(nodes|pods))", [this](const httplib::Request& req, httplib::Response& res) {
        if (req.get_header_value("Authorization") != token_) {
          res.status = 401;
          return;
        }
        const Resource& r = resources_.at(req.matches[1].str());
        std::string watch = req.get_param_value("watch");
        if (watch == "1" || watch == "true") return ServeWatch(r, res);
        size_t page = 0;
        if (std::string from = req.get_param_value("continue"); !from.empty()) {
          auto it = r.page_after.find(from);
          if (it == r.page_after.end()) {
            res.status = 410;
            return;
          }
          page = it->second;
        }
        // Written from the page itself: no copy of 2 MB a request.
        const std::string& body = r.pages.bodies[page];
        res.set_content_provider(body.size(), "application/json",
                                 [&body](size_t offset, size_t length, httplib::DataSink& sink) {
                                   return sink.write(body.data() + offset, length);
                                 });
      });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ < 0) throw std::runtime_error("ScaleApiServer: cannot bind 127.0.0.1");
  serving_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::yield();
}

ScaleApiServer::~ScaleApiServer() { Stop(); }

std::string ScaleApiServer::url() const { return "https://127.0.0.1:" + std::to_string(port_); }

void ScaleApiServer::ReleaseWatch() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = true;
  changed_.notify_all();
}

void ScaleApiServer::Stop() {
  server_->stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (serving_.joinable()) serving_.join();
}

void ScaleApiServer::ServeWatch(const Resource& r, httplib::Response& res) {
  res.set_chunked_content_provider(
      "application/json", [this, &r, next = size_t{0}](size_t, httplib::DataSink& sink) mutable {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock,
                      [&] { return stopping_ || (released_ && next < r.watch_blocks.size()); });
        if (stopping_) {
          sink.done();
          return true;
        }
        const std::string& block = r.watch_blocks[next++];
        lock.unlock();
        return sink.write(block.data(), block.size());
      });
}

int ServeClusterProcess(const ServeOptions& o, Link& parent) {
  auto start = std::chrono::steady_clock::now();
  ScaleCluster cluster(o.nodes, o.pods);
  ListPages nodes = cluster.NodeListPages(o.page_size);
  ListPages pods = cluster.PodListPages(o.page_size);
  std::vector<std::string> events = cluster.WatchBlocks(o.events, o.watch_block_bytes);
  size_t pod_bytes = 0;
  for (const std::string& page : pods.bodies) pod_bytes += page.size();
  size_t event_bytes = 0;
  for (const std::string& block : events) event_bytes += block.size();
  double render_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::unique_ptr<testing::FakeKubeApiServer> fake;
  std::unique_ptr<ScaleApiServer> own;
  std::string url;
  std::string ca_file;
  if (o.fake_server) {
    fake = std::make_unique<testing::FakeKubeApiServer>(o.token);
    fake->SetRecordedPages("nodes", std::move(nodes.bodies));
    fake->SetRecordedPages("pods", std::move(pods.bodies));
    fake->SetWatchChunkSize("pods", o.watch_block_bytes);
    url = fake->url();
    ca_file = fake->ca_file();
  } else {
    own = std::make_unique<ScaleApiServer>(o.token, std::move(nodes), std::move(pods),
                                           std::move(events));
    url = own->url();
    ca_file = own->ca_file();
  }
  parent.Send("ready " + url + " " + ca_file + " " + std::to_string(render_s) + " " +
              std::to_string(pod_bytes) + " " + std::to_string(event_bytes));
  for (std::string command = parent.Receive(); !command.empty(); command = parent.Receive()) {
    if (command == "go") {
      if (fake) {
        for (std::string& block : events) fake->PushWatchText("pods", std::move(block));
      } else {
        own->ReleaseWatch();
      }
    } else if (command == "cpu") {
      parent.Send(std::to_string(CpuSeconds(RUSAGE_SELF)));
    } else if (command == "stop") {
      parent.Send(std::to_string(CpuSeconds(RUSAGE_SELF)) + " " +
                  std::to_string(ReadMemory().hwm_mib));
      break;
    }
  }
  return 0;
}

}  // namespace gpuadmit::bench
