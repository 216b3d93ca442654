// FakeKubeApiServer: a Kubernetes API server for tests, over TLS on 127.0.0.1 (port 0, a
// throw-away self-signed certificate that is also its CA). It serves GET /api/v1/nodes and
// /api/v1/pods with a bearer token checked (401 otherwise):
//   - Lists from an in-memory set of objects, paged by `limit` + `continue`, with one
//     resourceVersion on every page; fieldSelector on status.phase, spec.nodeName,
//     metadata.name and metadata.namespace (=, ==, !=); or recorded pages served verbatim.
//   - `?watch=1` streams what the test pushes, in the chunk sizes it asks for, until the test
//     ends or drops the stream, the watch's timeoutSeconds passes, or the server stops.
//   - With a client CA, a TLS client certificate from it is required and stands in for the token.
//   - Faults for the next request of a kind: an HTTP status with a Status body (410, 500, or an
//     expired continue token), and a delay before answering (a slow server).
//   - Outages: every request answered with one status (SetOutage), or the server down
//     (Stop: connections refused) and up again on the same port (Restart).
// It serves coordination.k8s.io/v1 Leases too, for leader election, with the apiserver's
// semantics (FakeLeaseStore: resourceVersion set by the server, 409 Conflict on a stale one):
//   - GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}: 200, or 404 NotFound.
//   - POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases: 201, or 409 AlreadyExists.
//   - PUT  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}: 200; 409 Conflict when
//     the body's resourceVersion is set and stale (empty: unconditional); 404 when missing.
//   Faults ("leases", kLease) and outages apply to them too; Lease/SetLease read and plant one.
// And what a scheduling-gate lifter needs (pods as set with SetObjects("pods", ...)):
//   - GET   /api/v1/namespaces/{ns}/pods/{name}: 200 and the pod, or 404 NotFound.
//   - PATCH on the same path, Content-Type application/merge-patch+json (else 415
//     UnsupportedMediaType): applied and validated as the apiserver does (MergePatchPod:
//     fake_pod_update.h: 409 Conflict on a stale resourceVersion, 422 Invalid for a new gate or a
//     forbidden scheduling-directive change). A change is stored under a new resourceVersion
//     from a server-wide counter, above every one the server has handed out or been given, and
//     pushed as a MODIFIED event onto the pods watch stream. Lists keep the resourceVersion
//     SetObjects gave them. Faults: ("pods", kPod).
//   - POST  /api/v1/namespaces/{ns}/events: 201 and the Event (its namespace set), kept for
//     Events(). Faults: ("events", kEvent).
//   - GET   /version: v1.31.0 unless SetVersion says otherwise. Faults: ("version", kVersion).
//   All need the token, are recorded, and meet outages, as the other routes.
// Every request is recorded (method, target, headers, body) so tests can assert what the client
// asked.
//
//   FakeKubeApiServer api("s3cret");
//   api.SetObjects("nodes", {node_a, node_b}, "100");
//   api.PushWatchEvent("nodes", {{"type", "ADDED"}, {"object", node_c}});
//   ... KubeClient against api.url(), api.ca_file(), token "s3cret" ...
//   api.SetLease("gpuadmit", "gpuadmit", {{"spec", {{"holderIdentity", "replica-a"}}}});
//   ... the lifter PATCHes a pod's gate away ...
//   EXPECT_FALSE(api.Pod("team-a", "train-0")->at("spec").contains("schedulingGates"));
//
// Thread safety: every method may be called from any thread while the server runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_lease_store.h"
#include "tests/fakes/tls_files.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}  // namespace httplib

namespace gpuadmit::testing {

class FakeKubeApiServer {
 public:
  // kLease: any request on a Lease (get, create or update). kPod: a GET or PATCH of one pod.
  // kEvent: a POST of an Event. kVersion: a GET of /version.
  enum class RequestKind { kList, kListContinue, kWatch, kLease, kPod, kEvent, kVersion };

  // What the next request of a kind meets instead of (or before) its normal answer.
  struct Fault {
    int status = 0;                      // answer this status and a Status body; 0: serve
    std::chrono::milliseconds delay{0};  // wait this long first
    std::string body;                    // the Status body; empty: one made from `status`

    static Fault Status(int status, std::string body = "") { return {status, {}, std::move(body)}; }
    static Fault Delay(std::chrono::milliseconds delay) { return {0, delay, ""}; }
  };

  struct RecordedRequest {
    std::string method;         // "GET", "POST", "PUT", "PATCH"
    std::string target;         // path and query, as sent
    std::string authorization;  // the Authorization header
    std::string accept;
    std::string accept_encoding;
    std::string client_common_name;  // of the TLS client certificate, if one was presented
    int remote_port = 0;             // the client's port: one per connection
    std::string body;                // as sent; empty for a GET
    std::string content_type;        // the Content-Type header; empty for a GET
  };

  // Starts serving. `token` is the bearer token requests must carry. With `client_ca_file`, the
  // TLS handshake requires a client certificate signed by it, and such requests need no token.
  explicit FakeKubeApiServer(std::string token, const std::string& client_ca_file = "");
  ~FakeKubeApiServer();
  FakeKubeApiServer(const FakeKubeApiServer&) = delete;
  FakeKubeApiServer& operator=(const FakeKubeApiServer&) = delete;

  std::string url() const;  // "https://127.0.0.1:PORT"
  // The serving certificate's PEM file; it is self-signed, so also the CA to trust.
  const std::string& ca_file() const { return tls_.cert_file(); }
  void SetToken(std::string token);

  // `resource` is "nodes", "pods", or a DRA kind of resource.k8s.io/v1 ("resourceslices",
  // "resourceclaims", "deviceclasses", "resourceclaimtemplates": an empty list until set).
  // Items are served in this order, at `resource_version`.
  void SetObjects(const std::string& resource, const std::vector<nlohmann::json>& items,
                  std::string resource_version);
  // Recorded List bodies served verbatim: the first to a request without `continue`, page i+1 to
  // `continue` equal to page i's metadata.continue; any other token is 410 Expired.
  void SetRecordedPages(const std::string& resource, std::vector<std::string> bodies);
  // Applies to the next request of `kind` to `resource`; several queue up in order. Leases'
  // faults are `resource` "leases" with kind kLease; one pod's ("pods", kPod); Events'
  // ("events", kEvent); /version's ("version", kVersion).
  void InjectFault(const std::string& resource, RequestKind kind, Fault fault);

  // Watch scripting, per resource; what is pushed before a watch opens waits for it.
  // 0 (the default): each write carries all that is queued; n: writes of n bytes.
  void SetWatchChunkSize(const std::string& resource, size_t bytes);
  void PushWatchEvent(const std::string& resource, const nlohmann::json& event);  // + "\n"
  void PushWatchText(const std::string& resource, std::string text);              // as is
  void EndWatch(const std::string& resource);   // after what is queued: the final chunk
  void DropWatch(const std::string& resource);  // after what is queued: close, no final chunk
  // {"type":"ERROR","object":<Status 410 Expired>}, what the apiserver sends for a too-old RV.
  static nlohmann::json GoneEvent();

  // True once `count` watch streams on `resource` have started (headers sent), within `timeout`.
  bool WaitForWatches(const std::string& resource, size_t count, std::chrono::milliseconds timeout);
  std::vector<RecordedRequest> requests() const;

  // The stored Lease `ns`/`name` as the API would serve it; nullopt when there is none.
  std::optional<nlohmann::json> Lease(const std::string& ns, const std::string& name) const;
  // Stores `lease` as `ns`/`name`, replacing any: metadata.name and namespace are set, and a
  // fresh resourceVersion unless it has one (fresh ones given later are above a numeric one).
  void SetLease(const std::string& ns, const std::string& name, nlohmann::json lease);

  // The stored pod `ns`/`name` as GET serves it (after any PATCH); nullopt when there is none.
  std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const;
  // The Events POSTed so far, in order, as answered (metadata.namespace set).
  std::vector<nlohmann::json> Events() const;
  // What GET /version answers from now on: major, minor ("30+" on some managed clusters) and
  // gitVersion ("v1.30.2-eks-1234"); platform stays linux/amd64.
  void SetVersion(std::string major, std::string minor, std::string git_version);

  // Every request, of any kind, answers `status` and a Status body until SetOutage(0).
  void SetOutage(int status);

  // Ends open watch streams (cleanly), then stops serving. Called by the destructor.
  void Stop();
  // Stop()s if serving, then serves again on the same port with the same certificate and
  // state: the API server coming back. Throws if the port was taken meanwhile.
  void Restart();

 private:
  struct StoredObject {
    std::string json;                           // compact, as served
    std::map<std::string, std::string> fields;  // for fieldSelector
  };
  struct WatchStep {
    enum class Kind { kData, kEnd, kDrop } kind;
    std::string data;
  };
  struct Resource {
    std::string list_kind;  // "NodeList"
    std::vector<StoredObject> objects;
    std::string resource_version = "1";
    std::vector<std::string> recorded_pages;
    std::map<RequestKind, std::deque<Fault>> faults;
    std::deque<WatchStep> watch_steps;
    size_t chunk_size = 0;
    size_t watches_started = 0;
  };

  // Records `req`; answers 401, the outage status or the next fault of `kind` (after its delay).
  // False when `res` holds that answer.
  bool Admit(const httplib::Request& req, httplib::Response& res, const std::string& resource,
             RequestKind kind);
  void Serve(const httplib::Request& req, httplib::Response& res, const std::string& name);
  void ServeLease(const httplib::Request& req, httplib::Response& res);
  void ServePod(const httplib::Request& req, httplib::Response& res);
  void ServeEvent(const httplib::Request& req, httplib::Response& res);
  void ServeVersion(const httplib::Request& req, httplib::Response& res);
  void ServeList(const httplib::Request& req, httplib::Response& res, Resource& r);
  void ServeWatch(const httplib::Request& req, httplib::Response& res, const std::string& name);
  Resource& At(const std::string& name);  // mu_ held
  // The index of the pod `ns`/`name` among the stored pods; nullopt when none. mu_ held.
  std::optional<size_t> FindPod(const std::string& ns, const std::string& name) const;
  // Raises resource_version_ to `resource_version` when that is a number above it. mu_ held.
  void NoteResourceVersion(const std::string& resource_version);
  static StoredObject Store(const nlohmann::json& object);  // with its fieldSelector fields
  void Push(const std::string& name, WatchStep step);
  void Listen(int port);  // 0: any free port

  TlsFiles tls_;
  std::string client_ca_file_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread serving_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a push, a watch started, or stopping
  std::string token_;
  // "nodes", "pods"; "leases", "events" and "version" for their faults
  std::map<std::string, Resource> resources_;
  FakeLeaseStore leases_;
  uint64_t resource_version_ = 0;  // the highest resourceVersion handed out or given
  std::vector<nlohmann::json> events_;
  nlohmann::json version_;
  std::vector<RecordedRequest> requests_;
  int outage_status_ = 0;
  bool stopping_ = false;
};

}  // namespace gpuadmit::testing
