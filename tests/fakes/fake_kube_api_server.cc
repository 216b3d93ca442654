#include "tests/fakes/fake_kube_api_server.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <csignal>
#include <limits>
#include <optional>
#include <stdexcept>

#include "tests/fakes/elastic_task_queue.h"
#include "tests/fakes/fake_pod_update.h"
#include "tests/fakes/kube_status.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit::testing {
namespace {

using nlohmann::json;

// Fields an apiserver lets a fieldSelector name for pods and nodes, as far as the tests need.
const char* const kSelectableFields[] = {"metadata.name", "metadata.namespace", "spec.nodeName",
                                         "status.phase"};

struct FieldTerm {
  std::string field;
  std::string value;
  bool equal = true;
};

std::string StatusBody(int code) {
  std::string reason = code == 401   ? "Unauthorized"
                       : code == 410 ? "Expired"
                       : code == 500 ? "InternalError"
                       : code == 400 ? "BadRequest"
                                     : "Failure";
  std::string message = code == 410 ? "too old resource version: 1 (2)" : reason;
  return json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}}
      .dump();
}

// The recorded apiserver answer to a continue token that outlived its snapshot.
const std::string& ExpiredContinueBody() {
  static const std::string body =
      ReadSourceFile("tests/fixtures/watch/status-410-expired-continue.json");
  return body;
}

std::optional<std::vector<FieldTerm>> ParseFieldSelector(const std::string& selector) {
  std::vector<FieldTerm> terms;
  size_t start = 0;
  while (start < selector.size()) {
    size_t end = std::min(selector.find(',', start), selector.size());
    std::string term = selector.substr(start, end - start);
    start = end + 1;
    FieldTerm t;
    size_t op = term.find("!=");
    size_t op_size = 2;
    t.equal = op == std::string::npos;
    if (t.equal) op = term.find("==");
    if (t.equal && op == std::string::npos) {
      op = term.find('=');
      op_size = 1;
    }
    if (op == std::string::npos) return std::nullopt;
    t.field = term.substr(0, op);
    t.value = term.substr(op + op_size);
    if (std::find(std::begin(kSelectableFields), std::end(kSelectableFields), t.field) ==
        std::end(kSelectableFields)) {
      return std::nullopt;
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

// The verified client certificate's CN; empty without one.
std::string ClientCommonName(const httplib::Request& req) {
  X509* cert = req.ssl != nullptr ? SSL_get0_peer_certificate(req.ssl) : nullptr;
  if (cert == nullptr) return "";
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  return cn;
}

bool IsWatch(const httplib::Request& req) {
  std::string watch = req.get_param_value("watch");
  return watch == "1" || watch == "true";
}

// The media type of the request's body, without parameters such as charset.
std::string MediaType(const httplib::Request& req) {
  std::string type = req.get_header_value("Content-Type");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

// `object`[key] when it is a string; else "".
std::string StringField(const json& object, const char* key) {
  auto it = object.is_object() ? object.find(key) : object.end();
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

void Answer(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // replace: a name from the URL need not be UTF-8, and dump() would throw on it.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

}  // namespace

FakeKubeApiServer::FakeKubeApiServer(std::string token, const std::string& client_ca_file)
    : client_ca_file_(client_ca_file), token_(std::move(token)) {
  // As `gpuadmit serve` does: OpenSSL writes with write(2), and a client that hangs up mid-stream
  // (a cancelled watch) would otherwise kill the test process on the next write.
  std::signal(SIGPIPE, SIG_IGN);
  resources_["nodes"].list_kind = "NodeList";
  resources_["pods"].list_kind = "PodList";
  resources_["leases"].list_kind = "LeaseList";
  resources_["events"].list_kind = "EventList";
  resources_["resourceslices"].list_kind = "ResourceSliceList";
  resources_["resourceclaims"].list_kind = "ResourceClaimList";
  resources_["deviceclasses"].list_kind = "DeviceClassList";
  resources_["resourceclaimtemplates"].list_kind = "ResourceClaimTemplateList";
  resources_.try_emplace("version");  // for its faults
  // What kube-apiserver 1.31.0 answers, less its build fields (buildDate, goVersion, ...).
  version_ = {
      {"major", "1"}, {"minor", "31"}, {"gitVersion", "v1.31.0"}, {"platform", "linux/amd64"}};
  Listen(0);
}

void FakeKubeApiServer::Listen(int port) {
  server_ = std::make_unique<httplib::SSLServer>(
      tls_.cert_file().c_str(), tls_.key_file().c_str(),
      client_ca_file_.empty() ? nullptr : client_ca_file_.c_str());
  if (!server_->is_valid()) throw std::runtime_error("FakeKubeApiServer: TLS setup failed");
  // A thread per connection: each open watch holds one for its whole life.
  server_->new_task_queue = [] { return new ElasticTaskQueue(256); };
  server_->set_tcp_nodelay(true);
  server_->set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  // 1 s: bounds how long Stop() waits for a client that keeps an idle connection open.
  server_->set_keep_alive_timeout(1);
  server_->Get(R"(/api/v1/(nodes|pods))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 Serve(req, res, req.matches[1].str());
               });
  server_->Get(
      R"(/apis/resource\.k8s\.io/v1/)"
      R"((resourceslices|resourceclaims|deviceclasses|resourceclaimtemplates))",
      [this](const httplib::Request& req, httplib::Response& res) {
        Serve(req, res, req.matches[1].str());
      });
  const std::string leases = R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases)";
  auto serve_lease = [this](const httplib::Request& req, httplib::Response& res) {
    ServeLease(req, res);
  };
  server_->Get(leases + "/([^/]+)", serve_lease);
  server_->Post(leases, serve_lease);
  server_->Put(leases + "/([^/]+)", serve_lease);
  const std::string pod = R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))";
  auto serve_pod = [this](const httplib::Request& req, httplib::Response& res) {
    ServePod(req, res);
  };
  server_->Get(pod, serve_pod);
  server_->Patch(pod, serve_pod);
  server_->Post(
      R"(/api/v1/namespaces/([^/]+)/events)",
      [this](const httplib::Request& req, httplib::Response& res) { ServeEvent(req, res); });
  server_->Get("/version", [this](const httplib::Request& req, httplib::Response& res) {
    ServeVersion(req, res);
  });
  port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1")
                    : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ < 0) throw std::runtime_error("FakeKubeApiServer: cannot bind 127.0.0.1");
  serving_ = std::thread([this] { server_->listen_after_bind(); });
  // Stop() is lost on a server that has not begun listening; the loop begins within microseconds.
  while (!server_->is_running()) std::this_thread::yield();
}

FakeKubeApiServer::~FakeKubeApiServer() { Stop(); }

void FakeKubeApiServer::Stop() {
  // The listener first: a connection whose watch ends below then closes instead of waiting, kept
  // alive, for a next request.
  server_->stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (serving_.joinable()) serving_.join();
}

void FakeKubeApiServer::Restart() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  Listen(port_);
}

void FakeKubeApiServer::SetOutage(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  outage_status_ = status;
}

std::string FakeKubeApiServer::url() const { return "https://127.0.0.1:" + std::to_string(port_); }

void FakeKubeApiServer::SetToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

FakeKubeApiServer::Resource& FakeKubeApiServer::At(const std::string& name) {
  auto it = resources_.find(name);
  if (it == resources_.end()) throw std::invalid_argument("FakeKubeApiServer: no " + name);
  return it->second;
}

FakeKubeApiServer::StoredObject FakeKubeApiServer::Store(const json& object) {
  StoredObject o{object.dump(), {}};
  for (const char* field : kSelectableFields) {
    const json* at = &object;
    std::string path = field;
    for (size_t start = 0, dot; at != nullptr && start <= path.size(); start = dot + 1) {
      dot = std::min(path.find('.', start), path.size());
      auto child = at->is_object() ? at->find(path.substr(start, dot - start)) : at->end();
      at = child != at->end() ? &*child : nullptr;
    }
    o.fields[field] = at != nullptr && at->is_string() ? at->get<std::string>() : "";
  }
  return o;
}

void FakeKubeApiServer::NoteResourceVersion(const std::string& resource_version) {
  // 19 digits: below 2^64, so stoull cannot throw.
  if (resource_version.empty() || resource_version.size() > 19 ||
      resource_version.find_first_not_of("0123456789") != std::string::npos) {
    return;
  }
  resource_version_ = std::max<uint64_t>(resource_version_, std::stoull(resource_version));
}

void FakeKubeApiServer::SetObjects(const std::string& resource, const std::vector<json>& items,
                                   std::string resource_version) {
  std::vector<StoredObject> objects;
  objects.reserve(items.size());
  for (const json& item : items) objects.push_back(Store(item));
  std::lock_guard<std::mutex> lock(mu_);
  for (const json& item : items) {
    if (item.is_object() && item.contains("metadata")) {
      NoteResourceVersion(StringField(item["metadata"], "resourceVersion"));
    }
  }
  NoteResourceVersion(resource_version);
  Resource& r = At(resource);
  r.objects = std::move(objects);
  r.resource_version = std::move(resource_version);
  r.recorded_pages.clear();
}

void FakeKubeApiServer::SetRecordedPages(const std::string& resource,
                                         std::vector<std::string> bodies) {
  std::lock_guard<std::mutex> lock(mu_);
  At(resource).recorded_pages = std::move(bodies);
}

void FakeKubeApiServer::InjectFault(const std::string& resource, RequestKind kind, Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  At(resource).faults[kind].push_back(std::move(fault));
}

void FakeKubeApiServer::SetWatchChunkSize(const std::string& resource, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  At(resource).chunk_size = bytes;
}

void FakeKubeApiServer::Push(const std::string& name, WatchStep step) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    At(name).watch_steps.push_back(std::move(step));
  }
  changed_.notify_all();
}

void FakeKubeApiServer::PushWatchEvent(const std::string& resource, const json& event) {
  Push(resource, {WatchStep::Kind::kData, event.dump() + "\n"});
}
void FakeKubeApiServer::PushWatchText(const std::string& resource, std::string text) {
  Push(resource, {WatchStep::Kind::kData, std::move(text)});
}
void FakeKubeApiServer::EndWatch(const std::string& resource) {
  Push(resource, {WatchStep::Kind::kEnd, ""});
}
void FakeKubeApiServer::DropWatch(const std::string& resource) {
  Push(resource, {WatchStep::Kind::kDrop, ""});
}

json FakeKubeApiServer::GoneEvent() {
  return {{"type", "ERROR"}, {"object", json::parse(StatusBody(410))}};
}

bool FakeKubeApiServer::WaitForWatches(const std::string& resource, size_t count,
                                       std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  Resource& r = At(resource);
  return changed_.wait_for(lock, timeout, [&] { return r.watches_started >= count; });
}

std::optional<json> FakeKubeApiServer::Lease(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.Find(ns, name);
}

void FakeKubeApiServer::SetLease(const std::string& ns, const std::string& name, json lease) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.Plant(ns, name, std::move(lease));
  NoteResourceVersion(StringField(leases_.Find(ns, name)->at("metadata"), "resourceVersion"));
}

std::optional<size_t> FakeKubeApiServer::FindPod(const std::string& ns,
                                                 const std::string& name) const {
  const std::vector<StoredObject>& pods = resources_.at("pods").objects;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].fields.at("metadata.namespace") == ns &&
        pods[i].fields.at("metadata.name") == name) {
      return i;
    }
  }
  return std::nullopt;
}

std::optional<json> FakeKubeApiServer::Pod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<size_t> at = FindPod(ns, name);
  if (!at) return std::nullopt;
  return json::parse(resources_.at("pods").objects[*at].json);
}

std::vector<json> FakeKubeApiServer::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

void FakeKubeApiServer::SetVersion(std::string major, std::string minor, std::string git_version) {
  std::lock_guard<std::mutex> lock(mu_);
  version_["major"] = std::move(major);
  version_["minor"] = std::move(minor);
  version_["gitVersion"] = std::move(git_version);
}

std::vector<FakeKubeApiServer::RecordedRequest> FakeKubeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

bool FakeKubeApiServer::Admit(const httplib::Request& req, httplib::Response& res,
                              const std::string& resource, RequestKind kind) {
  std::optional<Fault> fault;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string client_cn = ClientCommonName(req);
    requests_.push_back({req.method, req.target, req.get_header_value("Authorization"),
                         req.get_header_value("Accept"), req.get_header_value("Accept-Encoding"),
                         client_cn, req.remote_port, req.body,
                         req.get_header_value("Content-Type")});
    if (client_cn.empty() && req.get_header_value("Authorization") != "Bearer " + token_) {
      res.status = 401;
      res.set_content(StatusBody(401), "application/json");
      return false;
    }
    if (outage_status_ != 0) {
      res.status = outage_status_;
      res.set_content(StatusBody(outage_status_), "application/json");
      return false;
    }
    auto& faults = At(resource).faults[kind];
    if (!faults.empty()) {
      fault = std::move(faults.front());
      faults.pop_front();
    }
  }
  if (fault && fault->delay.count() > 0) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, fault->delay, [this] { return stopping_; });
  }
  if (fault && fault->status != 0) {
    res.status = fault->status;
    res.set_content(fault->body.empty() ? StatusBody(fault->status) : fault->body,
                    "application/json");
    return false;
  }
  return true;
}

void FakeKubeApiServer::Serve(const httplib::Request& req, httplib::Response& res,
                              const std::string& name) {
  RequestKind kind = IsWatch(req)                ? RequestKind::kWatch
                     : req.has_param("continue") ? RequestKind::kListContinue
                                                 : RequestKind::kList;
  if (!Admit(req, res, name, kind)) return;
  if (kind == RequestKind::kWatch) return ServeWatch(req, res, name);
  std::lock_guard<std::mutex> lock(mu_);
  ServeList(req, res, At(name));
}

void FakeKubeApiServer::ServeLease(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, "leases", RequestKind::kLease)) return;
  const std::string ns = req.matches[1].str();
  std::lock_guard<std::mutex> lock(mu_);
  FakeLeaseStore::Reply reply = req.method == "POST" ? leases_.Create(ns, req.body)
                                : req.method == "PUT"
                                    ? leases_.Update(ns, req.matches[2].str(), req.body)
                                    : leases_.Get(ns, req.matches[2].str());
  if (reply.status < 300) {
    NoteResourceVersion(StringField(reply.body["metadata"], "resourceVersion"));
  }
  Answer(res, reply.status, reply.body);
}

void FakeKubeApiServer::ServePod(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, "pods", RequestKind::kPod)) return;
  const std::string name = req.matches[2].str();
  if (req.method == "PATCH" && MediaType(req) != "application/merge-patch+json") {
    // The apiserver accepts JSON patches, strategic merge patches and apply too; this fake not.
    return Answer(res, 415,
                  KubeStatus(415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted media "
                             "types include: application/merge-patch+json"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<size_t> at = FindPod(req.matches[1].str(), name);
  if (!at) {
    return Answer(res, 404,
                  KubeStatus(404, "NotFound", "pods \"" + name + "\" not found",
                             {{"name", name}, {"kind", "pods"}}));
  }
  Resource& pods = At("pods");
  StoredObject& stored = pods.objects[*at];
  if (req.method == "GET") return res.set_content(stored.json, "application/json");
  PodUpdate update = MergePatchPod(json::parse(stored.json), req.body);
  if (update.status == 200 && update.changed) {
    update.body["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    stored = Store(update.body);
    json event = {{"type", "MODIFIED"}, {"object", update.body}};
    pods.watch_steps.push_back({WatchStep::Kind::kData, event.dump() + "\n"});
    changed_.notify_all();
  }
  Answer(res, update.status, update.body);
}

void FakeKubeApiServer::ServeEvent(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, "events", RequestKind::kEvent)) return;
  const std::string ns = req.matches[1].str();
  json event = json::parse(req.body, nullptr, false);
  if (!event.is_object() || (event.contains("metadata") && !event["metadata"].is_object())) {
    return Answer(res, 400, KubeStatus(400, "BadRequest", "the body is not an Event object"));
  }
  json& metadata = event["metadata"];
  if (metadata.is_null()) metadata = json::object();
  const std::string body_ns = StringField(metadata, "namespace");
  if (!body_ns.empty() && body_ns != ns) {
    return Answer(res, 400,
                  KubeStatus(400, "BadRequest",
                             "the namespace of the provided object does not match the namespace "
                             "sent on the request"));
  }
  metadata["namespace"] = ns;
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(event);
  Answer(res, 201, event);
}

void FakeKubeApiServer::ServeVersion(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, "version", RequestKind::kVersion)) return;
  std::lock_guard<std::mutex> lock(mu_);
  Answer(res, 200, version_);
}

void FakeKubeApiServer::ServeList(const httplib::Request& req, httplib::Response& res,
                                  Resource& r) {
  const std::string token = req.get_param_value("continue");
  if (!r.recorded_pages.empty()) {
    size_t page = 0;
    while (!token.empty() && page + 1 < r.recorded_pages.size() &&
           json::parse(r.recorded_pages[page])["metadata"].value("continue", "") != token) {
      ++page;
    }
    if (!token.empty() && ++page >= r.recorded_pages.size()) {
      res.status = 410;
      return res.set_content(ExpiredContinueBody(), "application/json");
    }
    return res.set_content(r.recorded_pages[page], "application/json");
  }

  auto terms = ParseFieldSelector(req.get_param_value("fieldSelector"));
  if (!terms) {
    res.status = 400;
    return res.set_content(StatusBody(400), "application/json");
  }
  auto matches = [&](const StoredObject& o) {
    return std::all_of(terms->begin(), terms->end(), [&](const FieldTerm& t) {
      return (o.fields.at(t.field) == t.value) == t.equal;
    });
  };
  // Tokens are "<resourceVersion>/<index of the next object>": a token from before SetObjects
  // changed the version has expired, as one does on an apiserver after compaction.
  size_t next = 0;
  if (!token.empty()) {
    size_t slash = token.find('/');
    if (slash == std::string::npos || token.substr(0, slash) != r.resource_version) {
      res.status = 410;
      return res.set_content(ExpiredContinueBody(), "application/json");
    }
    next = std::stoul(token.substr(slash + 1));
  }
  size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 0;
  std::string items;
  size_t served = 0;
  for (; next < r.objects.size() && (limit == 0 || served < limit); ++next) {
    if (!matches(r.objects[next])) continue;
    items += (served++ == 0 ? "" : ",") + r.objects[next].json;
  }
  while (next < r.objects.size() && !matches(r.objects[next])) ++next;
  std::string metadata = R"({"resourceVersion":")" + r.resource_version + "\"";
  if (next < r.objects.size()) {
    metadata += R"(,"continue":")" + r.resource_version + "/" + std::to_string(next) + "\"";
  }
  res.set_content(R"({"kind":")" + r.list_kind + R"(","apiVersion":"v1","metadata":)" + metadata +
                      R"(},"items":[)" + items + "]}",
                  "application/json");
}

void FakeKubeApiServer::ServeWatch(const httplib::Request& req, httplib::Response& res,
                                   const std::string& name) {
  // 1800 s: the apiserver's --min-request-timeout, its shortest watch when none is asked for.
  long seconds =
      req.has_param("timeoutSeconds") ? std::stol(req.get_param_value("timeoutSeconds")) : 1800;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  Resource* r = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r = &At(name);
  }
  res.set_chunked_content_provider(
      "application/json",
      [this, r, deadline, started = false](size_t, httplib::DataSink& sink) mutable {
        std::unique_lock<std::mutex> lock(mu_);
        if (!started) {
          started = true;
          ++r->watches_started;
          changed_.notify_all();
        }
        changed_.wait_until(lock, deadline, [&] { return stopping_ || !r->watch_steps.empty(); });
        if (stopping_ || r->watch_steps.empty()) {  // stopping, or timeoutSeconds passed
          sink.done();
          return true;
        }
        std::string data;
        while (!r->watch_steps.empty() && r->watch_steps.front().kind == WatchStep::Kind::kData) {
          data += r->watch_steps.front().data;
          r->watch_steps.pop_front();
        }
        if (data.empty()) {
          WatchStep::Kind ending = r->watch_steps.front().kind;
          r->watch_steps.pop_front();
          if (ending == WatchStep::Kind::kDrop) return false;  // httplib closes, no final chunk
          sink.done();
          return true;
        }
        size_t chunk = r->chunk_size == 0 ? data.size() : r->chunk_size;
        lock.unlock();
        for (size_t at = 0; at < data.size(); at += chunk) {
          if (!sink.write(data.data() + at, std::min(chunk, data.size() - at))) return false;
        }
        return true;
      });
}

}  // namespace gpuadmit::testing
