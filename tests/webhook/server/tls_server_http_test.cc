// TlsServer's HTTP framing over real TLS on 127.0.0.1, port 0, with a client that sends exactly
// the bytes given: pipelining, Expect: 100-continue, refused framings, trickled bodies, and
// what Stop does to idle and busy kept-alive connections.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/loopback_server.h"
#include "tests/fakes/raw_tls_client.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/tls_files.h"
#include "tests/fakes/wait_until.h"
#include "webhook/server/tls_server.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::RawTlsClient;
using Clock = std::chrono::steady_clock;

std::string Post(const std::string& body, std::string_view extra_headers = {}) {
  return "POST /mutate?timeout=10s HTTP/1.1\r\nHost: gpuadmit\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n" + std::string(extra_headers) + "\r\n" + body;
}

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string Body(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

bool HasHeader(const std::string& response, const std::string& line) {
  return response.substr(0, response.find("\r\n\r\n") + 2).find("\r\n" + line + "\r\n") !=
         std::string::npos;
}

class TlsServerHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handler_.SetPolicy(std::make_shared<const Policy>());
    handler_.SetSnapshot(
        std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  }

  void Start(int read_timeout_seconds = 10) {
    ServerOptions options = testing::LoopbackOptions(tls_);
    options.read_timeout_seconds = read_timeout_seconds;
    auto server = TlsServer::Create(options, handler_, metrics_, log_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(server).value();
    serving_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  std::string review_ = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  testing::TlsFiles tls_;
  Logger log_{LogLevel::kError};
  Metrics metrics_;
  AdmissionHandler handler_{log_, metrics_};
  std::unique_ptr<TlsServer> server_;
  std::thread serving_;
};

TEST_F(TlsServerHttpTest, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  Start();
  RawTlsClient c(server_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(Post(review_) + "GET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\n\r\n"));
  std::string review = c.ReadResponse();
  EXPECT_EQ(StatusLine(review), "HTTP/1.1 200 OK");
  EXPECT_EQ(json::parse(Body(review))["response"]["uid"], json::parse(review_)["request"]["uid"]);
  EXPECT_EQ(Body(c.ReadResponse()), "ok\n");
  EXPECT_EQ(Body(c.ReadResponse()), "ready\n");
}

// The head is parsed once a request, when its last byte arrives; requests of the same size in
// turn on one connection, or a head in two parts, must each be read anew.
TEST_F(TlsServerHttpTest, EachRequestInTurnIsReadAnewHoweverItsBytesArrive) {
  Start();
  RawTlsClient c(server_->port());
  ASSERT_TRUE(c.ok());
  auto review_with_uid = [&](const std::string& uid) {
    json review = json::parse(review_);
    review["request"]["uid"] = uid;
    return Post(review.dump());
  };
  for (const std::string uid : {"uid-a", "uid-b"}) {  // the same size, in the same buffer
    ASSERT_TRUE(c.Send(review_with_uid(uid)));
    std::string answer = c.ReadResponse();
    ASSERT_EQ(StatusLine(answer), "HTTP/1.1 200 OK");
    EXPECT_EQ(json::parse(Body(answer))["response"]["uid"], uid);
  }
  std::string split = review_with_uid("uid-c");
  ASSERT_TRUE(c.Send(split.substr(0, 40)));  // inside the head
  // The server has read the first part alone: the connection is busy with a request then, and
  // Drain with no settle and a deadline of now says whether any connection is.
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return !server_->Drain(std::chrono::milliseconds(0), Clock::now()); }));
  ASSERT_TRUE(c.Send(split.substr(40)));
  std::string answer = c.ReadResponse();
  ASSERT_EQ(StatusLine(answer), "HTTP/1.1 200 OK");
  EXPECT_EQ(json::parse(Body(answer))["response"]["uid"], "uid-c");
}

// One worker loop, sixteen connections whose requests arrive together: the loop serves what one
// wake-up brings, then writes the answers. Every answer reaches its own connection, including
// when one client has gone before its answer is written.
TEST_F(TlsServerHttpTest, RequestsArrivingTogetherAreEachAnsweredOnTheirOwnConnection) {
  ServerOptions options = testing::LoopbackOptions(tls_);
  options.worker_threads = 1;
  auto server = TlsServer::Create(options, handler_, metrics_, log_);
  ASSERT_TRUE(server.ok()) << server.error().message;
  server_ = std::move(server).value();
  serving_ = std::thread([this] { server_->Run(); });

  constexpr int kClients = 16;
  std::vector<std::unique_ptr<RawTlsClient>> clients;
  std::vector<std::string> uids;
  std::vector<std::string> requests;
  for (int i = 0; i < kClients; ++i) {  // every handshake first, so the requests come together
    clients.push_back(std::make_unique<RawTlsClient>(server_->port()));
    ASSERT_TRUE(clients.back()->ok());
    json review = json::parse(review_);
    uids.push_back("uid-" + std::to_string(i));
    review["request"]["uid"] = uids.back();
    requests.push_back(Post(review.dump()) + "GET /healthz HTTP/1.1\r\n\r\n");
  }
  for (int i = 0; i < kClients; ++i) ASSERT_TRUE(clients[i]->Send(requests[i]));
  clients[3].reset();  // gone before reading: its answer cannot be delivered
  for (int i = 0; i < kClients; ++i) {
    if (!clients[i]) continue;
    std::string answer = clients[i]->ReadResponse();
    ASSERT_EQ(StatusLine(answer), "HTTP/1.1 200 OK") << "client " << i;
    EXPECT_EQ(json::parse(Body(answer))["response"]["uid"], uids[i]);
    EXPECT_EQ(Body(clients[i]->ReadResponse()), "ok\n") << "client " << i;
  }
  RawTlsClient after(server_->port());  // and the loop still serves
  ASSERT_TRUE(after.Send("GET /healthz HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(Body(after.ReadResponse()), "ok\n");
}

TEST_F(TlsServerHttpTest, ExpectContinueGetsA100BeforeTheBodyIsSent) {
  Start();
  RawTlsClient c(server_->port());
  std::string request = Post(review_, "Expect: 100-continue\r\n");
  size_t head = request.find("\r\n\r\n") + 4;
  ASSERT_TRUE(c.Send(request.substr(0, head)));
  EXPECT_EQ(c.ReadResponse(), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send(request.substr(head)));
  EXPECT_EQ(StatusLine(c.ReadResponse()), "HTTP/1.1 200 OK");
}

TEST_F(TlsServerHttpTest, RefusedFramingsGetTheirStatusAndTheConnectionCloses) {
  Start();
  struct Case {
    std::string request;
    std::string status_line;
  };
  const Case cases[] = {
      {"POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       "HTTP/1.1 411 Length Required"},
      {"POST /mutate HTTP/2.0\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported"},
      {"BREW /mutate HTTP/1.1\r\nContent-Length: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /x HTTP/1.1\r\nX: " + std::string(kMaxRequestHead, 'a'),
       "HTTP/1.1 431 Request Header Fields Too Large"},
  };
  for (const Case& k : cases) {
    RawTlsClient c(server_->port());
    ASSERT_TRUE(c.Send(k.request));
    std::string response = c.ReadResponse();
    EXPECT_EQ(StatusLine(response), k.status_line) << k.request.substr(0, 40);
    EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
    EXPECT_TRUE(c.Closed()) << k.request.substr(0, 40);
  }
}

TEST_F(TlsServerHttpTest, UnknownPathsAre404AndWrongMethods405WithAllow) {
  Start();
  RawTlsClient c(server_->port());
  ASSERT_TRUE(
      c.Send("GET /nothing HTTP/1.1\r\n\r\nGET /mutate HTTP/1.1\r\n\r\n"
             "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(StatusLine(c.ReadResponse()), "HTTP/1.1 404 Not Found");
  std::string get_mutate = c.ReadResponse();
  EXPECT_EQ(StatusLine(get_mutate), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_TRUE(HasHeader(get_mutate, "Allow: POST")) << get_mutate;
  std::string post_healthz = c.ReadResponse();
  EXPECT_EQ(StatusLine(post_healthz), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_TRUE(HasHeader(post_healthz, "Allow: GET")) << post_healthz;
  // Still kept alive after all three.
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(Body(c.ReadResponse()), "ok\n");
}

TEST_F(TlsServerHttpTest, ABodyTrickledByteByByteIsCutByTheReadTimeoutNotKeptAlive) {
  Start(/*read_timeout_seconds=*/1);
  RawTlsClient c(server_->port());
  std::string request = Post(review_);
  size_t head = request.find("\r\n\r\n") + 4;
  Clock::time_point sent = Clock::now();
  ASSERT_TRUE(c.Send(request.substr(0, head)));
  // A byte every 50 ms keeps the connection active, but the request never completes in time.
  // One thread does both (an SSL object is not for two threads): trickle until an answer is
  // there to read, at most 100 bytes (5 s).
  std::string body = request.substr(head);
  for (size_t i = 0; i < 100 && !c.Readable(/*wait_ms=*/50); ++i) {
    if (!c.Send(body.substr(i, 1))) break;  // the server has closed
  }
  std::string response = c.ReadResponse();
  auto cut_after = Clock::now() - sent;
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 408 Request Timeout");
  EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
  EXPECT_GE(cut_after, std::chrono::milliseconds(900));
  EXPECT_LT(cut_after, std::chrono::seconds(3));
}

TEST_F(TlsServerHttpTest, AfterStopAnIdleConnectionAnswersOneLastRequestThenCloses) {
  Start();
  RawTlsClient last(server_->port());
  RawTlsClient idle(server_->port());
  for (RawTlsClient* c : {&last, &idle}) {
    ASSERT_TRUE(c->Send("GET /healthz HTTP/1.1\r\n\r\n"));
    ASSERT_EQ(Body(c->ReadResponse()), "ok\n");
  }
  Clock::time_point stop = Clock::now();
  server_->Stop();
  // A request sent just as the server stopped is answered, and told the connection closes.
  ASSERT_TRUE(last.Send("GET /readyz HTTP/1.1\r\n\r\n"));
  std::string response = last.ReadResponse();
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 503 Service Unavailable");
  EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
  EXPECT_TRUE(last.Closed());
  // The one that stays idle is closed after the 1 s linger, not the 120 s idle timeout.
  serving_.join();
  EXPECT_LT(Clock::now() - stop, std::chrono::seconds(3));
  EXPECT_TRUE(idle.Closed());
}

TEST_F(TlsServerHttpTest, ARequestHalfReadWhenStopComesIsAnsweredWithConnectionClose) {
  Start();
  RawTlsClient busy(server_->port());
  std::string request = Post(review_);
  ASSERT_TRUE(busy.Send(request.substr(0, request.size() / 2)));
  // Wait until the server has read the first half: the connection is busy then. Drain with no
  // settle and a deadline of now says whether no connection is busy.
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return !server_->Drain(std::chrono::milliseconds(0), Clock::now()); }));
  server_->Stop();
  EXPECT_FALSE(server_->Drain(std::chrono::milliseconds(100),
                              Clock::now() + std::chrono::milliseconds(300)));
  ASSERT_TRUE(busy.Send(request.substr(request.size() / 2)));
  std::string response = busy.ReadResponse();
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 200 OK");
  EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
  EXPECT_TRUE(busy.Closed());
  EXPECT_TRUE(
      server_->Drain(std::chrono::milliseconds(100), Clock::now() + std::chrono::seconds(5)));
}

}  // namespace
}  // namespace gpuadmit
