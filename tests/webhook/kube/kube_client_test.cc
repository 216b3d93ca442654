// KubeClient against FakeKubeApiServer over loopback TLS: List paging with recorded pages,
// watch streams from the recorded events in odd chunk sizes, tokens (wrong, rotated), client
// certificates, TLS verification, faults (410, 500, drop, slow) and Cancel.
#include "webhook/kube/kube_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json/yaml_json.h"
#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/tls_files.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeKubeApiServer;
using testing::ReadSourceFile;
using Kind = FakeKubeApiServer::RequestKind;
using Fault = FakeKubeApiServer::Fault;

// Generous: only reached when the code under test is broken.
constexpr milliseconds kDeadline{10000};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A PEM file as a kubeconfig's file field gives it.
PemSource PemFile(const std::string& path) { return {ReadFile(path), path}; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
  }
  return lines;
}

class KubeClientTest : public ::testing::Test {
 protected:
  KubeConfig Config() const {
    KubeConfig config;
    config.server = api_.url();
    config.certificate_authority = PemFile(api_.ca_file());
    config.token = "token-a";
    return config;
  }

  std::unique_ptr<KubeClient> Client(const KubeConfig& config, KubeClientOptions options = {}) {
    auto client = KubeClient::Create(config, options);
    if (!client.ok()) ADD_FAILURE() << client.error().message;
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // Runs a watch to its end, collecting the events.
  static Result<int> WatchAll(KubeClient& client, const std::string& path,
                              std::vector<std::string>& events) {
    return client.Watch(path, [&](std::string_view event) {
      events.emplace_back(event);
      return true;
    });
  }

  FakeKubeApiServer api_{"token-a"};
};

TEST_F(KubeClientTest, ListFollowsRecordedPagesThroughTheContinueToken) {
  std::string page1 = ReadSourceFile("tests/fixtures/watch/list-pods-chunk1-with-continue.json");
  std::string page2 = ReadSourceFile("tests/fixtures/watch/list-pods-chunk2-final.json");
  api_.SetRecordedPages("pods", {page1, page2});
  auto client = Client(Config());

  auto first = client->List("/api/v1/pods?limit=2");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first.value().status, 200);
  EXPECT_EQ(first.value().body, page1);
  std::string token = json::parse(first.value().body)["metadata"]["continue"];
  auto second = client->List("/api/v1/pods?limit=2&continue=" + token);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second.value().body, page2);

  auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/api/v1/pods?limit=2");
  EXPECT_EQ(requests[1].target, "/api/v1/pods?limit=2&continue=eyJ2IjoibWV0YS5rOHMua");
  EXPECT_EQ(requests[1].authorization, "Bearer token-a");
  EXPECT_EQ(requests[1].accept, "application/json");
  EXPECT_EQ(requests[1].accept_encoding, "identity");
}

TEST_F(KubeClientTest, ListPagesRecordedNodesAtOneResourceVersion) {
  std::vector<json> nodes;
  for (const char* file : {"a100-sxm4-40gb-mig-7g.40gb-kubectl-edit.yaml",
                           "a100-sxm4-40gb-mig-mixed-2x1g.5gb-1x2g.10gb-kubectl-edit.yaml",
                           "tesla-t4-x2-gpu-2-kubectl-edit.yaml"}) {
    nodes.push_back(
        YamlToJson(ReadSourceFile(std::string("tests/fixtures/nodes/") + file)).value());
  }
  api_.SetObjects("nodes", nodes, "4242");
  auto client = Client(Config());

  auto first = client->List("/api/v1/nodes?limit=2");
  ASSERT_TRUE(first.ok()) << first.error().message;
  json page1 = json::parse(first.value().body);
  EXPECT_EQ(page1["kind"], "NodeList");
  EXPECT_EQ(page1["metadata"]["resourceVersion"], "4242");
  EXPECT_EQ(page1["items"], json(std::vector<json>{nodes[0], nodes[1]}));
  auto second = client->List("/api/v1/nodes?limit=2&continue=" +
                             page1["metadata"]["continue"].get<std::string>());
  ASSERT_TRUE(second.ok()) << second.error().message;
  json page2 = json::parse(second.value().body);
  EXPECT_EQ(page2["metadata"], json({{"resourceVersion", "4242"}}));  // last page: no continue
  EXPECT_EQ(page2["items"], json(std::vector<json>{nodes[2]}));
}

TEST_F(KubeClientTest, TerminalPodsAreFilteredByTheFieldSelector) {
  std::vector<json> pods;
  for (const char* phase : {"Running", "Succeeded", "Pending", "Failed"}) {
    pods.push_back({{"metadata", {{"name", phase}}}, {"status", {{"phase", phase}}}});
  }
  api_.SetObjects("pods", pods, "7");
  auto client = Client(Config());
  auto list = client->List(
      "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(json::parse(list.value().body)["items"], json({pods[0], pods[2]}));
}

TEST_F(KubeClientTest, ExpiredContinueTokenIsA410WithTheRecordedStatus) {
  api_.SetObjects("pods", {json{{"metadata", {{"name", "a"}}}}}, "9");
  auto client = Client(Config());
  auto list = client->List("/api/v1/pods?limit=1&continue=8%2F1");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list.value().status, 410);
  EXPECT_EQ(list.value().body,
            ReadSourceFile("tests/fixtures/watch/status-410-expired-continue.json"));
}

TEST_F(KubeClientTest, ServerErrorsAreStatusesNotTransportErrors) {
  api_.InjectFault("nodes", Kind::kList, Fault::Status(500));
  auto client = Client(Config());
  auto list = client->List("/api/v1/nodes");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list.value().status, 500);
  EXPECT_EQ(json::parse(list.value().body)["reason"], "InternalError");
  EXPECT_EQ(client->List("/api/v1/nodes").value().status, 200);  // one fault, then served
}

TEST_F(KubeClientTest, PatchGoesOutWithItsContentTypeBodyAndToken) {
  json pod = {{"metadata", {{"name", "train-0"}, {"namespace", "team-a"}}},
              {"spec", {{"schedulingGates", {{{"name", "gpuadmit.io/capacity"}}}}}}};
  api_.SetObjects("pods", {pod}, "7");
  auto client = Client(Config());
  const std::string patch = R"({"spec":{"schedulingGates":null}})";
  auto patched = client->Send("PATCH", "/api/v1/namespaces/team-a/pods/train-0", patch,
                              "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  EXPECT_EQ(patched.value().status, 200);
  auto posted = client->Send("POST", "/api/v1/namespaces/team-a/events", "{}");
  ASSERT_TRUE(posted.ok()) << posted.error().message;
  EXPECT_EQ(posted.value().status, 201);

  auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/team-a/pods/train-0");
  EXPECT_EQ(requests[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(requests[0].body, patch);
  EXPECT_EQ(requests[0].authorization, "Bearer token-a");
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].content_type, "application/json");  // the default
}

TEST_F(KubeClientTest, ListsAndWatchesShareOneKeptAliveConnection) {
  api_.EndWatch("pods");
  auto client = Client(Config());
  // Seven: past httplib's default of five requests per connection.
  for (int i = 0; i < 7; ++i) ASSERT_EQ(client->List("/api/v1/nodes").value().status, 200);
  std::vector<std::string> events;
  ASSERT_EQ(WatchAll(*client, "/api/v1/pods?watch=1", events).value(), 200);
  ASSERT_EQ(client->List("/api/v1/nodes").value().status, 200);
  auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 9u);
  for (const auto& request : requests) EXPECT_EQ(request.remote_port, requests[0].remote_port);
}

class WatchChunking : public KubeClientTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(WatchChunking, EachRecordedEventIsDeliveredWholeWhateverTheChunkSize) {
  std::string stream =
      ReadSourceFile("tests/fixtures/watch/watch-pods-added-modified-deleted-2015.jsonl");
  json node_event = json::parse(
      ReadSourceFile("tests/fixtures/watch/watch-node-added-event-openshift-2017.json"));
  api_.SetWatchChunkSize("pods", GetParam());
  api_.PushWatchText("pods", stream);
  api_.PushWatchEvent("pods", node_event);
  api_.PushWatchEvent("pods", FakeKubeApiServer::GoneEvent());
  api_.EndWatch("pods");
  auto client = Client(Config());

  std::vector<std::string> events;
  auto status = WatchAll(*client, "/api/v1/pods?watch=1&resourceVersion=1389", events);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status.value(), 200);
  std::vector<std::string> expected = Lines(stream);
  ASSERT_EQ(expected.size(), 3u);
  expected.push_back(node_event.dump());
  expected.push_back(FakeKubeApiServer::GoneEvent().dump());
  EXPECT_EQ(events, expected);
  EXPECT_EQ(json::parse(events[4])["object"]["code"], 410);  // the reflector's cue to relist
}

// 1 and 7 bytes split events mid-line; 0 writes the whole stream, several events, at once.
INSTANTIATE_TEST_SUITE_P(OneByteSevenBytesAndWholeStream, WatchChunking,
                         ::testing::Values(size_t{1}, size_t{7}, size_t{0}));

TEST_F(KubeClientTest, WatchStopsWhenTheCallbackSaysSo) {
  api_.PushWatchText("pods", "{\"n\":1}\n{\"n\":2}\n");
  auto client = Client(Config());
  int seen = 0;
  auto status = client->Watch("/api/v1/pods?watch=1", [&](std::string_view) {
    ++seen;
    return false;
  });
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status.value(), 200);
  EXPECT_EQ(seen, 1);
}

TEST_F(KubeClientTest, GoneAsAnHttpStatusIsReturnedAs410WithNoEvents) {
  api_.InjectFault("pods", Kind::kWatch, Fault::Status(410));
  auto client = Client(Config());
  std::vector<std::string> events;
  auto status = WatchAll(*client, "/api/v1/pods?watch=1&resourceVersion=1", events);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status.value(), 410);
  EXPECT_TRUE(events.empty());
}

TEST_F(KubeClientTest, ConnectionDroppedMidStreamIsAnErrorAfterTheWholeEvents) {
  api_.PushWatchText("pods", "{\"n\":1}\n{\"n\":");
  api_.DropWatch("pods");
  auto client = Client(Config());
  std::vector<std::string> events;
  auto status = WatchAll(*client, "/api/v1/pods?watch=1", events);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("closed mid-response"), std::string::npos)
      << status.error().message;
  EXPECT_EQ(events, std::vector<std::string>{"{\"n\":1}"});
}

TEST_F(KubeClientTest, WatchOutlivesASilentStreamUntilTheServersTimeoutSeconds) {
  KubeClientOptions options;
  options.watch_read_margin = milliseconds(500);
  auto client = Client(Config(), options);
  std::vector<std::string> events;
  // Silent for its whole second: the read timeout is timeoutSeconds plus the margin.
  auto status = WatchAll(*client, "/api/v1/nodes?watch=1&timeoutSeconds=1", events);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status.value(), 200);
}

TEST_F(KubeClientTest, CancelEndsAWatchBlockedOnASilentStreamWellUnderASecond) {
  auto client = Client(Config());
  auto watch = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/pods?watch=1", [](std::string_view) { return true; });
  });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, kDeadline));
  auto start = std::chrono::steady_clock::now();
  client->Cancel();
  ASSERT_EQ(watch.wait_for(kDeadline), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(300));
  Result<int> status = watch.get();
  // The stream had begun (200), unless the client was still reading the headers.
  if (status.ok()) {
    EXPECT_EQ(status.value(), 200);
  } else {
    EXPECT_NE(status.error().message.find("cancelled"), std::string::npos);
  }
  auto later = client->List("/api/v1/pods");  // cancelled for good, without a request
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().message.find("cancelled"), std::string::npos);
  EXPECT_EQ(api_.requests().size(), 1u);
}

// A listener that accepts TCP but never answers the TLS ClientHello.
class SilentTlsPeer {
 public:
  SilentTlsPeer() : listener_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (bind(listener_, generic, size) != 0 || listen(listener_, 4) != 0 ||
        getsockname(listener_, generic, &size) != 0) {
      throw std::runtime_error("SilentTlsPeer: cannot listen");
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentTlsPeer() {
    if (accepted_ >= 0) close(accepted_);
    close(listener_);
  }
  int port() const { return port_; }
  // Blocks until the client has connected; it is then waiting for the server's TLS hello.
  void AcceptOne() { accepted_ = accept(listener_, nullptr, nullptr); }

 private:
  int listener_;
  int accepted_ = -1;
  int port_ = 0;
};

TEST(KubeClientCancel, CancelEndsAWatchStuckInTheTlsHandshakeWellUnderASecond) {
  // SIGPIPE's default action ends the process: after the failed handshake httplib writes a TLS
  // close_notify to the shut socket, and the client must survive that on its own.
  auto previous = std::signal(SIGPIPE, SIG_DFL);
  SilentTlsPeer peer;
  KubeConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(peer.port());
  config.insecure_skip_tls_verify = true;
  auto client = KubeClient::Create(config).value();  // connect_timeout 5 s
  auto watch = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/pods?watch=1", [](std::string_view) { return true; });
  });
  peer.AcceptOne();
  auto start = std::chrono::steady_clock::now();
  client->Cancel();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(100));  // Cancel itself
  ASSERT_EQ(watch.wait_for(kDeadline), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(300));
  Result<int> status = watch.get();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "GET " + config.server + "/api/v1/pods?watch=1: cancelled");
  client.reset();
  std::signal(SIGPIPE, previous);
}

TEST_F(KubeClientTest, StoppingTheServerEndsAnOpenWatchCleanly) {
  auto client = Client(Config());
  auto watch = std::async(std::launch::async, [&] {
    return client->Watch("/api/v1/pods?watch=1", [](std::string_view) { return true; });
  });
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, kDeadline));
  api_.Stop();
  ASSERT_EQ(watch.wait_for(kDeadline), std::future_status::ready);
  Result<int> status = watch.get();
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status.value(), 200);
}

TEST_F(KubeClientTest, SlowServerPastTheReadTimeoutIsAnErrorAndWithinItAnAnswer) {
  api_.InjectFault("nodes", Kind::kList, Fault::Delay(milliseconds(200)));
  api_.InjectFault("nodes", Kind::kList, Fault::Delay(kDeadline));
  KubeClientOptions options;
  options.list_read_timeout = milliseconds(1000);
  auto client = Client(Config(), options);
  auto slow = client->List("/api/v1/nodes");
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_EQ(slow.value().status, 200);
  auto too_slow = client->List("/api/v1/nodes");
  ASSERT_FALSE(too_slow.ok());
  EXPECT_EQ(too_slow.error().message,
            "GET " + api_.url() +
                "/api/v1/nodes: no response: the connection closed or stayed silent past the "
                "1000 ms read timeout");
}

TEST_F(KubeClientTest, WrongTokenIsAnswered401) {
  KubeConfig config = Config();
  config.token = "wrong";
  auto list = Client(config)->List("/api/v1/nodes");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list.value().status, 401);
  EXPECT_EQ(json::parse(list.value().body)["reason"], "Unauthorized");
}

TEST_F(KubeClientTest, RotatedTokenFileIsUsedFromTheNextRequest) {
  testing::TlsFiles scratch;  // a temporary directory
  std::string token_file = scratch.dir() + "/token";
  std::ofstream(token_file) << "token-a\n";
  KubeConfig config = Config();
  config.token = "";
  config.token_file = token_file;
  auto client = Client(config);
  EXPECT_EQ(client->List("/api/v1/nodes").value().status, 200);

  // As kubelet rotates a projected token: write aside, then rename over the old one.
  std::ofstream(token_file + ".new") << "token-b\n";
  std::filesystem::rename(token_file + ".new", token_file);
  api_.SetToken("token-b");
  EXPECT_EQ(client->List("/api/v1/nodes").value().status, 200);
  EXPECT_EQ(api_.requests().back().authorization, "Bearer token-b");
}

TEST_F(KubeClientTest, MissingTokenFileIsAnErrorAtCreateNamingIt) {
  KubeConfig config = Config();
  config.token_file = "/nonexistent/token";
  auto client = KubeClient::Create(config);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().message, "token file /nonexistent/token: No such file or directory");
}

TEST_F(KubeClientTest, ServerSignedByAnotherCaFailsVerificationWithAClearMessage) {
  testing::TlsFiles other;
  KubeConfig config = Config();
  config.certificate_authority = PemFile(other.cert_file());
  auto list = Client(config)->List("/api/v1/nodes");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().message,
            "GET " + api_.url() +
                "/api/v1/nodes: server certificate not trusted: self-signed certificate for "
                "/CN=localhost (verified against " +
                other.cert_file() + ")");
  EXPECT_TRUE(api_.requests().empty());

  config.insecure_skip_tls_verify = true;  // the same CA, verification off
  EXPECT_EQ(Client(config)->List("/api/v1/nodes").value().status, 200);
}

TEST_F(KubeClientTest, TlsServerNameIsCheckedInsteadOfTheUrlHost) {
  KubeConfig config = Config();
  config.tls_server_name = "localhost";  // in the certificate; the URL says 127.0.0.1
  EXPECT_EQ(Client(config)->List("/api/v1/nodes").value().status, 200);
  config.tls_server_name = "kubernetes.default.svc";  // not in it
  auto list = Client(config)->List("/api/v1/nodes");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().message.find("server certificate not trusted: hostname mismatch"),
            std::string::npos)
      << list.error().message;
}

TEST(KubeClientCertificate, ClientCertificateFromDataAuthenticatesWithoutAToken) {
  testing::TlsFiles client_tls;
  FakeKubeApiServer api("unused", client_tls.cert_file());
  KubeConfig config;
  config.server = api.url();
  config.certificate_authority = PemFile(api.ca_file());
  config.client_certificate = PemSource{ReadFile(client_tls.cert_file()),
                                        "kubeconfig k: user \"u\": client-certificate-data"};
  config.client_key =
      PemSource{ReadFile(client_tls.key_file()), "kubeconfig k: user \"u\": client-key-data"};
  auto client = KubeClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto list = client.value()->List("/api/v1/nodes");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list.value().status, 200);
  EXPECT_EQ(api.requests().at(0).client_common_name, "localhost");
  EXPECT_EQ(api.requests().at(0).authorization, "");

  // Without the certificate the server's handshake refuses the connection.
  config.client_certificate.reset();
  config.client_key.reset();
  EXPECT_FALSE(KubeClient::Create(config).value()->List("/api/v1/nodes").ok());
}

TEST(KubeClientCertificate, KeyThatDoesNotMatchTheCertificateIsAnErrorNamingBoth) {
  testing::TlsFiles a, b;
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.client_certificate = PemFile(a.cert_file());
  config.client_key = PemFile(b.key_file());
  auto client = KubeClient::Create(config);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().message,
            b.key_file() + ": does not match the certificate in " + a.cert_file());
  config.client_key = PemSource{"garbage", "kubeconfig k: user \"u\": client-key-data"};
  client = KubeClient::Create(config);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().message.rfind("kubeconfig k: user \"u\": client-key-data: not a PEM "
                                         "private key",
                                         0),
            0u)
      << client.error().message;
}

TEST(KubeClientUrl, ServerMustBeAnHttpsUrlWithAValidPort) {
  for (const char* server : {"http://k:80", "https://", "https://k:99999", "https://[::1",
                             "https://k:80x", "https://user@k", "https://fd00::1"}) {
    KubeConfig config;
    config.server = server;
    config.insecure_skip_tls_verify = true;
    auto client = KubeClient::Create(config);
    ASSERT_FALSE(client.ok()) << server;
    EXPECT_EQ(client.error().message,
              std::string("server ") + server + ": not an https://host[:port][/path] URL");
  }
  KubeConfig config;
  config.server = "https://[::1]:6443/k8s/clusters/c-1/";
  config.insecure_skip_tls_verify = true;
  EXPECT_TRUE(KubeClient::Create(config).ok());
}

TEST(KubeClientUnreachable, RefusedConnectionIsAnErrorNamingTheUrl) {
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.insecure_skip_tls_verify = true;
  auto list = KubeClient::Create(config).value()->List("/api/v1/nodes");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().message.rfind("GET https://127.0.0.1:1/api/v1/nodes: ", 0), 0u)
      << list.error().message;
}

}  // namespace
}  // namespace gpuadmit
