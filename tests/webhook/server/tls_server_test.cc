// TlsServer over real TLS on 127.0.0.1, port 0: routes, transport limits, TLS versions, and
// many kept-alive connections served at once.
#include "webhook/server/tls_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/fakes/loopback_server.h"
#include "tests/fakes/raw_tls_client.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/tls_files.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ConnectLoopback;
using testing::LoopbackOptions;

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handler_.SetPolicy(std::make_shared<const Policy>());
    handler_.SetSnapshot(
        std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
    ServerOptions options = LoopbackOptions(tls_);
    auto server = TlsServer::Create(options, handler_, metrics_, log_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(server).value();
    serving_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  std::unique_ptr<httplib::SSLClient> Client() {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    c->enable_server_certificate_verification(false);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    c->set_read_timeout(10, 0);
    return c;
  }

  testing::TlsFiles tls_;
  Logger log_{LogLevel::kError};
  Metrics metrics_;
  AdmissionHandler handler_{log_, metrics_};
  std::unique_ptr<TlsServer> server_;
  std::thread serving_;
};

TEST_F(TlsServerTest, MutateAnswersAReviewAndHealthRoutesAnswer) {
  auto c = Client();
  std::string body = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  auto res = c->Post("/mutate?timeout=10s", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["response"]["uid"], json::parse(body)["request"]["uid"]);
  EXPECT_EQ(c->Get("/healthz")->status, 200);
  EXPECT_EQ(c->Get("/readyz")->status, 200);
  auto metrics = c->Get("/metrics");
  // Patched: placement prefers gpu-medium, the node with the pod's 2g.20gb free.
  EXPECT_NE(metrics->body.find("gpuadmit_admission_reviews_total{outcome=\"patch\"} 1"),
            std::string::npos);
}

TEST_F(TlsServerTest, BodiesOverSevenMebibytesAre413AndTheServerKeepsServing) {
  auto c = Client();
  auto big = c->Post("/mutate", std::string(8 * 1024 * 1024, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto after =
      Client()->Post("/mutate", testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"),
                     "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(TlsServerTest, ThreeHundredKeptAliveConnectionsAreAllServedAtOnce) {
  // The apiserver keeps one connection per in-flight call (up to 200 per apiserver). With a
  // fixed pool, connection N+1 would wait behind an idle one until its 10 s read timeout.
  std::string body = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  std::vector<std::unique_ptr<httplib::SSLClient>> clients;
  for (int i = 0; i < 300; ++i) clients.push_back(Client());
  for (int round = 0; round < 2; ++round) {
    for (auto& c : clients) {
      auto res = c->Post("/mutate", body, "application/json");
      ASSERT_TRUE(res) << "round " << round;
      ASSERT_EQ(res->status, 200);
    }
  }
  EXPECT_EQ(metrics_.Value(Counter::kReviewsPatched), 600u);
}

// Handshakes with a client that offers only TLS versions [min, max]; true if it completes.
bool Handshake(int port, int min_version, int max_version) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(ctx, 0);  // let OpenSSL 3 offer TLS 1.1 at all
  SSL_CTX_set_min_proto_version(ctx, min_version);
  SSL_CTX_set_max_proto_version(ctx, max_version);
  int fd = ConnectLoopback(port);
  bool ok = false;
  if (fd >= 0) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    ok = SSL_connect(ssl) == 1;
    SSL_free(ssl);
  }
  close(fd);
  SSL_CTX_free(ctx);
  return ok;
}

TEST_F(TlsServerTest, RefusesTlsBelowOnePointTwo) {
  EXPECT_FALSE(Handshake(server_->port(), TLS1_VERSION, TLS1_1_VERSION));
  EXPECT_TRUE(Handshake(server_->port(), TLS1_2_VERSION, TLS1_2_VERSION));
  EXPECT_TRUE(Handshake(server_->port(), TLS1_3_VERSION, TLS1_3_VERSION));
}

TEST(TlsServerCreate, AKeyThatDoesNotMatchTheCertificateIsAClearError) {
  testing::TlsFiles a;
  testing::TlsFiles b;
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.cert_file = a.cert_file();
  options.key_file = b.key_file();
  auto server = TlsServer::Create(options, handler, metrics, log);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().message,
            b.key_file() + ": does not match the certificate in " + a.cert_file());
  options.cert_file = a.dir() + "/missing.crt";
  auto missing = TlsServer::Create(options, handler, metrics, log);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message.rfind(options.cert_file + ": not a usable PEM certificate", 0),
            0u);
}

TEST(TlsServerClientCa, OnlyClientsWithACertificateFromTheCaAreServed) {
  testing::TlsFiles server_tls;
  testing::TlsFiles client_tls;  // self-signed: its own CA
  testing::TlsFiles stranger;
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>());
  ServerOptions options = LoopbackOptions(server_tls);
  options.client_ca_file = client_tls.cert_file();
  auto server = TlsServer::Create(options, handler, metrics, log);
  ASSERT_TRUE(server.ok()) << server.error().message;
  std::thread serving([&] { server.value()->Run(); });
  auto get = [&](const testing::TlsFiles* client) {
    auto c = client ? std::make_unique<httplib::SSLClient>("127.0.0.1", server.value()->port(),
                                                           client->cert_file(), client->key_file())
                    : std::make_unique<httplib::SSLClient>("127.0.0.1", server.value()->port());
    c->enable_server_certificate_verification(false);
    auto res = c->Get("/healthz");
    return res ? res->status : -1;
  };
  EXPECT_EQ(get(&client_tls), 200);
  EXPECT_EQ(get(nullptr), -1);    // no certificate: the handshake fails
  EXPECT_EQ(get(&stranger), -1);  // a certificate from another CA: likewise
  server.value()->Stop();
  serving.join();
}

TEST(TlsServerClientCa, WithAClientNameOnlyACertificateNamingItIsServed) {
  testing::TlsFiles server_tls;
  testing::TlsFiles client_tls;  // names localhost
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>());
  for (const char* name : {"localhost", "kube-apiserver"}) {
    ServerOptions options = LoopbackOptions(server_tls);
    options.client_ca_file = client_tls.cert_file();
    options.client_name = name;
    auto server = TlsServer::Create(options, handler, metrics, log);
    ASSERT_TRUE(server.ok()) << server.error().message;
    std::thread serving([&] { server.value()->Run(); });
    httplib::SSLClient c("127.0.0.1", server.value()->port(), client_tls.cert_file(),
                         client_tls.key_file());
    c.enable_server_certificate_verification(false);
    auto res = c.Get("/healthz");
    if (std::string(name) == "localhost") {
      EXPECT_TRUE(res && res->status == 200) << "the certificate names localhost";
    } else {
      EXPECT_FALSE(res) << "the certificate does not name kube-apiserver: refused";
    }
    server.value()->Stop();
    serving.join();
  }
}

TEST(TlsServerCreate, ExpiredAndNotYetValidCertificatesAreClearErrors) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  testing::TlsFiles expired(-2 * 86400, 86400);  // valid two days ago, for one day
  testing::TlsFiles future(86400, 86400);        // valid from tomorrow
  for (const testing::TlsFiles* tls : {&expired, &future}) {
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.cert_file = tls->cert_file();
    options.key_file = tls->key_file();
    auto server = TlsServer::Create(options, handler, metrics, log);
    ASSERT_FALSE(server.ok());
    std::string want = tls == &expired ? ": certificate expired (notAfter "
                                       : ": certificate not valid yet (notBefore ";
    EXPECT_EQ(server.error().message.rfind(tls->cert_file() + want, 0), 0u)
        << server.error().message;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The PEM certificate a fresh handshake is shown, or "" if the handshake fails.
std::string PresentedCertificate(int port) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  int fd = ConnectLoopback(port);
  std::string pem;
  if (fd >= 0) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      if (X509* peer = SSL_get1_peer_certificate(ssl)) {
        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_X509(bio, peer);
        char* data = nullptr;
        long n = BIO_get_mem_data(bio, &data);
        pem.assign(data, static_cast<size_t>(n));
        BIO_free(bio);
        X509_free(peer);
      }
    }
    SSL_free(ssl);
  }
  close(fd);
  SSL_CTX_free(ctx);
  return pem;
}

void CopyFile(const std::string& from, const std::string& to) {
  std::string tmp = to + ".new";
  {
    std::ifstream in(from, std::ios::binary);
    std::ofstream out(tmp, std::ios::binary);
    out << in.rdbuf();
  }
  std::rename(tmp.c_str(), to.c_str());  // as a Secret mount swaps: whole files, atomically
}

TEST_F(TlsServerTest, ReloadedCertificateIsPresentedToNewHandshakesWhileOldConnectionsKeepWorking) {
  std::string first = ReadFile(tls_.cert_file());
  ASSERT_EQ(PresentedCertificate(server_->port()), first);
  auto kept = Client();
  ASSERT_EQ(kept->Get("/healthz")->status, 200);  // a kept-alive connection on the first pair

  testing::TlsFiles next;
  CopyFile(next.cert_file(), tls_.cert_file());
  CopyFile(next.key_file(), tls_.key_file());
  EXPECT_EQ(server_->ReloadCertificate(), std::nullopt);

  EXPECT_EQ(PresentedCertificate(server_->port()), ReadFile(next.cert_file()));
  auto res = kept->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(TlsServerTest, ABadNewPairIsRefusedAndTheCurrentOneStays) {
  std::string first = ReadFile(tls_.cert_file());
  testing::TlsFiles other;
  testing::TlsFiles expired(-2 * 86400, 86400);

  CopyFile(other.cert_file(), tls_.cert_file());  // the key no longer matches
  EXPECT_EQ(server_->ReloadCertificate(),
            tls_.key_file() + ": does not match the certificate in " + tls_.cert_file());
  EXPECT_EQ(PresentedCertificate(server_->port()), first);

  CopyFile(expired.cert_file(), tls_.cert_file());
  CopyFile(expired.key_file(), tls_.key_file());
  auto error = server_->ReloadCertificate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->rfind(tls_.cert_file() + ": certificate expired (notAfter ", 0), 0u) << *error;
  EXPECT_EQ(PresentedCertificate(server_->port()), first);

  std::remove(tls_.cert_file().c_str());  // deleted: refused likewise
  EXPECT_TRUE(server_->ReloadCertificate().has_value());
  EXPECT_EQ(PresentedCertificate(server_->port()), first);
}

TEST(TlsServerConnectionCap, ConnectionsBeyondTheCapAreRefusedQuicklyNotLeftWaiting) {
  testing::TlsFiles tls;
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  ServerOptions options = LoopbackOptions(tls);
  options.max_connections = 2;
  auto server = TlsServer::Create(options, handler, metrics, log);
  ASSERT_TRUE(server.ok()) << server.error().message;
  std::thread serving([&] { server.value()->Run(); });
  auto client = [&] {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server.value()->port());
    c->enable_server_certificate_verification(false);
    c->set_keep_alive(true);
    c->set_read_timeout(5, 0);
    return c;
  };
  auto first = client();
  auto second = client();
  ASSERT_EQ(first->Get("/healthz")->status, 200);  // both hold their threads while kept alive
  ASSERT_EQ(second->Get("/healthz")->status, 200);

  auto third = client();
  auto start = std::chrono::steady_clock::now();
  auto refused = third->Get("/healthz");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Connection"), "close");
  EXPECT_LT(took, std::chrono::seconds(2));  // answered, not queued behind the idle two
  EXPECT_EQ(metrics.Value(Counter::kOverCapacity), 1u);

  // A freed connection makes room again (its thread notices the close within its poll).
  first.reset();
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {  // at most 100 fresh connections
    auto c = client();
    auto res = c->Get("/healthz");
    status = res ? res->status : -1;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(second->Get("/healthz")->status, 200);
  second.reset();  // a kept-alive connection would hold the shutdown for its idle timeout
  third.reset();
  server.value()->Stop();
  serving.join();
}

TEST(TlsServerSlowClient, AClientTricklingItsHeadersIsCutByTheReadTimeoutAndHoldsNoOneBack) {
  testing::TlsFiles tls;
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  ServerOptions options = LoopbackOptions(tls);
  options.read_timeout_seconds = 1;
  auto server = TlsServer::Create(options, handler, metrics, log);
  ASSERT_TRUE(server.ok()) << server.error().message;
  std::thread serving([&] { server.value()->Run(); });

  // The slow client: a TLS connection that sends part of a request line, then nothing.
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  int fd = ConnectLoopback(server.value()->port(), /*receive_timeout_seconds=*/10);
  ASSERT_GE(fd, 0);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  ASSERT_EQ(SSL_connect(ssl), 1);
  const char partial[] = "POST /mutate HTTP/1.1\r\nHo";
  ASSERT_GT(SSL_write(ssl, partial, sizeof partial - 1), 0);
  auto sent = std::chrono::steady_clock::now();

  // Meanwhile another client is served at once.
  httplib::SSLClient other("127.0.0.1", server.value()->port());
  other.enable_server_certificate_verification(false);
  auto res = other.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(900));

  // The slow request is cut once the read timeout passes: a 4xx, not a thread held forever.
  char buf[256];
  int n = SSL_read(ssl, buf, sizeof buf);
  auto cut_after = std::chrono::steady_clock::now() - sent;
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, 10), "HTTP/1.1 4") << std::string(buf, static_cast<size_t>(n));
  EXPECT_GE(cut_after, std::chrono::milliseconds(900));
  EXPECT_LT(cut_after, std::chrono::seconds(5));
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  server.value()->Stop();
  serving.join();
}

}  // namespace
}  // namespace gpuadmit
