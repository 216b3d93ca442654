// Who a review came from, as TlsServer tells its route: a peer replica's forwarded mark is
// honoured only over a connection with a peer's certificate, and every caller's reservation
// scope follows from its certificate and its address.
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "tests/fakes/loopback_server.h"
#include "tests/fakes/tls_files.h"
#include "webhook/server/tls_server.h"

namespace gpuadmit {
namespace {

struct Seen {
  int status = -1;  // -1: no answer (the handshake failed)
  bool forwarded = false;
  std::string scope;
};

class TlsServerCallers : public ::testing::Test {
 protected:
  void Start(const std::string& client_ca) {
    ServerOptions options = testing::LoopbackOptions(server_tls_);
    options.peer_ca_file = peer_.cert_file();
    options.peer_name = "localhost";
    options.client_ca_file = client_ca;
    auto server = TlsServer::Create(options, handler_, metrics_, log_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(server).value();
    server_->SetReviewRoute(
        [this](std::string_view, std::string_view, bool forwarded, std::string_view scope) {
          seen_.forwarded = forwarded;
          seen_.scope = std::string(scope);
          return HandlerAnswer{200, "{}"};
        });
    serving_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  // POST /mutate as the holder of `cert` (none: no certificate), with `mark` as the forwarded
  // header when given.
  Seen Post(const testing::TlsFiles* cert, const std::string& mark) {
    auto c = cert ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port(),
                                                         cert->cert_file(), cert->key_file())
                  : std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    c->enable_server_certificate_verification(false);
    httplib::Headers headers;
    if (!mark.empty()) headers.emplace("Gpuadmit-Forwarded", mark);
    seen_ = Seen{};
    auto res = c->Post("/mutate", headers, "{}", "application/json");
    seen_.status = res ? res->status : -1;
    return seen_;
  }

  testing::TlsFiles server_tls_;
  testing::TlsFiles peer_;       // self-signed, naming localhost: the peer CA is itself
  testing::TlsFiles apiserver_;  // likewise, for the client CA
  testing::TlsFiles stranger_;
  Logger log_{LogLevel::kError};
  Metrics metrics_;
  AdmissionHandler handler_{log_, metrics_};
  std::unique_ptr<TlsServer> server_;
  std::thread serving_;
  Seen seen_;
};

TEST_F(TlsServerCallers, OnlyAPeersMarkIsHonouredAndItCarriesTheScopeThePeerSaw) {
  Start("");
  Seen peer = Post(&peer_, "address 10.9.8.7");
  EXPECT_EQ(peer.status, 200);
  EXPECT_TRUE(peer.forwarded);
  EXPECT_EQ(peer.scope, "address 10.9.8.7");
  EXPECT_EQ(Post(&peer_, "authenticated").scope, "");  // the apiserver's, as the peer saw it

  for (const testing::TlsFiles* other : {static_cast<const testing::TlsFiles*>(nullptr),
                                         static_cast<const testing::TlsFiles*>(&stranger_)}) {
    Seen forged = Post(other, "authenticated");
    EXPECT_EQ(forged.status, 200) << "without a client CA, anyone is served";
    EXPECT_FALSE(forged.forwarded);
    EXPECT_EQ(forged.scope, "address 127.0.0.1");
  }
  EXPECT_EQ(metrics_.Value(Counter::kForwardMarkIgnored), 2u);
  Seen unmarked = Post(&peer_, "");
  EXPECT_FALSE(unmarked.forwarded);
  EXPECT_EQ(unmarked.scope, "address 127.0.0.1");
  EXPECT_EQ(metrics_.Value(Counter::kForwardMarkIgnored), 2u);
}

TEST_F(TlsServerCallers, WithAClientCaTheApiserverAndThePeersAreServedAndNoOneElse) {
  Start(apiserver_.cert_file());
  Seen apiserver = Post(&apiserver_, "");
  EXPECT_EQ(apiserver.status, 200);
  EXPECT_FALSE(apiserver.forwarded);
  EXPECT_EQ(apiserver.scope, "");  // authenticated: the one shared scope
  Seen peer = Post(&peer_, "authenticated");
  EXPECT_EQ(peer.status, 200);
  EXPECT_TRUE(peer.forwarded);
  EXPECT_EQ(Post(nullptr, "authenticated").status, -1);     // refused at the handshake
  EXPECT_EQ(Post(&stranger_, "authenticated").status, -1);  // likewise
}

TEST(TlsServerCallersCreate, AnUnreadablePeerCaIsAClearError) {
  testing::TlsFiles tls;
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  ServerOptions options = testing::LoopbackOptions(tls);
  options.peer_ca_file = tls.dir() + "/missing-ca.crt";
  options.peer_name = "localhost";
  auto server = TlsServer::Create(options, handler, metrics, log);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().message.rfind(options.peer_ca_file + ": cannot open", 0), 0u)
      << server.error().message;
}

TEST(ReservationScopeOf, TheAuthenticatedShareOneScopeAndEveryOtherAddressHasItsOwn) {
  EXPECT_EQ(ReservationScope({"10.0.0.1", true, false, {}}), "");
  EXPECT_EQ(ReservationScope({"10.0.0.1", false, false, {}}), "address 10.0.0.1");
  EXPECT_EQ(ReservationScope({"10.0.0.1", false, true, {}}), "address 10.0.0.1");
}

}  // namespace
}  // namespace gpuadmit
