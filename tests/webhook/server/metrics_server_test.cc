// MetricsServer (serve --metrics-listen) on 127.0.0.1:0, read with cpp-httplib's client.
#include "webhook/server/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace gpuadmit {
namespace {

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = MetricsServer::Create("127.0.0.1", 0, metrics_, [this] { return ready_.load(); });
    ASSERT_TRUE(made.ok()) << made.error().message;
    server_ = std::move(made).value();
    serving_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
  }
  httplib::Client Client() const { return httplib::Client("127.0.0.1", server_->port()); }

  Metrics metrics_;
  std::atomic<bool> ready_{true};
  std::unique_ptr<MetricsServer> server_;
  std::thread serving_;
};

TEST_F(MetricsServerTest, ServesTheCountersAsTheTlsListenerDoes) {
  metrics_.Inc(Counter::kPolicyReloads);
  metrics_.Inc(Counter::kPolicyReloads);
  httplib::Client client = Client();
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  EXPECT_EQ(res->body, metrics_.Render());
  EXPECT_NE(res->body.find("gpuadmit_policy_reloads_total 2\n"), std::string::npos) << res->body;
}

TEST_F(MetricsServerTest, HealthzIsAlwaysOkAndReadyzFollowsReadiness) {
  httplib::Client client = Client();
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ready\n");
  ready_ = false;  // a stop began, or no policy or inventory yet
  auto not_ready = client.Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_EQ(not_ready->body, "not ready\n");
  health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(MetricsServerTest, OtherMethodsGet405WithAllowAndOtherPaths404) {
  httplib::Client client = Client();
  auto post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
  auto del = client.Delete("/readyz");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto mutate = client.Post("/mutate", "{}", "application/json");  // admission stays on TLS
  ASSERT_TRUE(mutate);
  EXPECT_EQ(mutate->status, 404);
  auto other = client.Get("/metrics/extra");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

TEST_F(MetricsServerTest, StopEndsRunWithAKeptAliveConnectionOpen) {
  httplib::Client client = Client();
  client.set_keep_alive(true);
  ASSERT_TRUE(client.Get("/healthz"));
  server_->Stop();
  serving_.join();  // returns although the client still holds its connection
  EXPECT_FALSE(Client().Get("/healthz"));
}

TEST(MetricsServer, StopBeforeRunMakesRunReturnAtOnce) {
  Metrics metrics;
  auto made = MetricsServer::Create("127.0.0.1", 0, metrics, [] { return true; });
  ASSERT_TRUE(made.ok()) << made.error().message;
  made.value()->Stop();
  made.value()->Run();  // would block for good if Stop had been lost
}

TEST(MetricsServer, StopRacingRunStillEndsIt) {
  Metrics metrics;
  for (int i = 0; i < 50; ++i) {
    auto made = MetricsServer::Create("127.0.0.1", 0, metrics, [] { return true; });
    ASSERT_TRUE(made.ok()) << made.error().message;
    MetricsServer& server = *made.value();
    std::thread serving([&server] { server.Run(); });
    server.Stop();
    serving.join();
  }
}

TEST(MetricsServer, APortInUseIsAnErrorNamingTheAddress) {
  Metrics metrics;
  auto first = MetricsServer::Create("127.0.0.1", 0, metrics, [] { return true; });
  ASSERT_TRUE(first.ok()) << first.error().message;
  int port = first.value()->port();
  auto second = MetricsServer::Create("127.0.0.1", port, metrics, [] { return true; });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.error().message;
}

TEST(MetricsServer, AnAddressThatIsNoHostIsAnError) {
  Metrics metrics;
  auto made = MetricsServer::Create("no-such-host.invalid", 0, metrics, [] { return true; });
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("no-such-host.invalid:0"), std::string::npos)
      << made.error().message;
}

}  // namespace
}  // namespace gpuadmit
