// ScaleApiServer: the Kubernetes API as bench/scale/inventory_scale.cc needs it at 150,000 pods, over TLS
// on 127.0.0.1 (port 0, a throw-away self-signed certificate that is also its CA). GET
// /api/v1/nodes and /api/v1/pods with the bearer token checked: List pages served verbatim, the
// page after a continue token found in a hash map (O(1) a page); `?watch=1` holds the stream open
// and, once ReleaseWatch() is called, writes the pods' pre-rendered event blocks one chunk each.
//
// Why not tests/fakes/FakeKubeApiServer: its recorded pages find a continue token by parsing every
// earlier page with nlohmann (page k costs k parses of about 2 MB; 300 pages is 45,000 parses), and
// SetObjects needs every object as a nlohmann DOM (GBs for 150,000 pods).
//
//   ScaleApiServer api("token", std::move(node_pages), std::move(pod_pages), std::move(blocks));
//   ... KubeClient against api.url(), api.ca_file() ...
//   api.ReleaseWatch();
//
// Thread safety: ReleaseWatch and Stop may be called from any thread while the server runs.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/scale/process_probe.h"
#include "bench/scale/scale_cluster.h"
#include "tests/fakes/tls_files.h"

namespace httplib {
class SSLServer;
struct Response;
}  // namespace httplib

namespace gpuadmit::bench {

class ScaleApiServer {
 public:
  ScaleApiServer(std::string token, ListPages nodes, ListPages pods,
                 std::vector<std::string> pod_watch_blocks);
  ~ScaleApiServer();
  ScaleApiServer(const ScaleApiServer&) = delete;
  ScaleApiServer& operator=(const ScaleApiServer&) = delete;

  std::string url() const;  // "https://127.0.0.1:PORT"
  const std::string& ca_file() const { return tls_.cert_file(); }

  // Lets open and future pods watches write the event blocks.
  void ReleaseWatch();
  // Ends open watch streams, then stops serving. Called by the destructor.
  void Stop();

 private:
  struct Resource {
    ListPages pages;
    std::unordered_map<std::string, size_t> page_after;  // continue token -> page index
    std::vector<std::string> watch_blocks;
  };

  void ServeWatch(const Resource& r, httplib::Response& res);

  std::string token_;
  std::map<std::string, Resource> resources_;  // "nodes", "pods"; fixed after construction
  testing::TlsFiles tls_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread serving_;
  int port_ = 0;

  std::mutex mu_;
  std::condition_variable changed_;
  bool released_ = false;
  bool stopping_ = false;
};

struct ServeOptions {
  int nodes = 5000;
  int pods = 150000;
  int events = 200000;       // in the pods watch stream
  bool fake_server = false;  // serve with tests/fakes FakeKubeApiServer instead
  std::string token;
  int page_size = 500;
  size_t watch_block_bytes = 1 << 20;
};

// The API server process of bench/scale/inventory_scale.cc: renders the cluster, serves it, and
// answers the parent over `parent`: "ready URL CA_FILE RENDER_S POD_LIST_BYTES EVENT_BYTES"
// first; then "go" lets the pods watch stream flow, "cpu" is answered with its CPU seconds, and
// "stop" (or the parent's end) with "CPU_S PEAK_RSS_MIB" before it returns 0.
int ServeClusterProcess(const ServeOptions& options, Link& parent);

}  // namespace gpuadmit::bench
