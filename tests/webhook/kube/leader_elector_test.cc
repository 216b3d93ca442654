#include "webhook/kube/leader_elector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/wait_until.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/lease_lock.h"

namespace gpuadmit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kToken = "lease-token";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One replica: its own client, lock and elector, as serve builds them.
struct Replica {
  Replica(testing::FakeKubeApiServer& api, const Clock& clock, Logger& log, Metrics& metrics,
          const std::string& id, LeaderElectionOptions options = {}) {
    KubeConfig config;
    config.server = api.url();
    config.certificate_authority = {ReadFile(api.ca_file()), api.ca_file()};
    config.token = kToken;
    client = KubeClient::Create(config).value();
    lock = std::make_unique<LeaseLock>(*client, "gpuadmit", "gpuadmit");
    options.identity = id;
    options.address = id + ".example:8443";
    elector = std::make_unique<LeaderElector>(*lock, clock, log, metrics, options);
  }
  std::unique_ptr<KubeClient> client;
  std::unique_ptr<LeaseLock> lock;
  std::unique_ptr<LeaderElector> elector;
};

using testing::WaitUntil;

// Lease requests to the fake API from a connection not among `before`'s: another replica's.
size_t LeaseRequestsFromNewConnections(
    const std::vector<testing::FakeKubeApiServer::RecordedRequest>& before,
    const std::vector<testing::FakeKubeApiServer::RecordedRequest>& now) {
  std::set<int> old_ports;
  for (const auto& r : before) old_ports.insert(r.remote_port);
  size_t n = 0;
  for (const auto& r : now) {
    if (r.target.find("/leases/") != std::string::npos && !old_ports.contains(r.remote_port)) ++n;
  }
  return n;
}

class LeaderElectorTest : public ::testing::Test {
 protected:
  testing::FakeKubeApiServer api_{kToken};
  testing::FakeClock clock_;
  Logger log_{LogLevel::kError};
  Metrics metrics_;
};

TEST_F(LeaderElectorTest, OfThreeReplicasOneTakesTheLeaseAndTheOthersLearnItsAddress) {
  Replica a(api_, clock_, log_, metrics_, "a"), b(api_, clock_, log_, metrics_, "b"),
      c(api_, clock_, log_, metrics_, "c");
  EXPECT_TRUE(a.elector->TryAcquireOrRenew());  // no Lease yet: created
  EXPECT_FALSE(b.elector->TryAcquireOrRenew());
  EXPECT_FALSE(c.elector->TryAcquireOrRenew());
  EXPECT_EQ(b.elector->Leader(), "a");
  EXPECT_EQ(c.elector->LeaderAddress(), "a.example:8443");

  auto lease = api_.Lease("gpuadmit", "gpuadmit");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ((*lease)["metadata"]["annotations"]["gpuadmit.io/leader-address"], "a.example:8443");

  // Renewing keeps the acquire time and the transitions, and moves the resourceVersion.
  std::string version = (*lease)["metadata"]["resourceVersion"];
  clock_.Advance(seconds(2));
  EXPECT_TRUE(a.elector->TryAcquireOrRenew());
  auto renewed = api_.Lease("gpuadmit", "gpuadmit");
  EXPECT_NE((*renewed)["metadata"]["resourceVersion"], version);
  EXPECT_EQ((*renewed)["spec"]["acquireTime"], (*lease)["spec"]["acquireTime"]);
  EXPECT_EQ((*renewed)["spec"]["leaseTransitions"], 0);
}

TEST_F(LeaderElectorTest, ALeaseNobodyRenewsIsTakenOnlyAfterTheLeaseDurationAsThisReplicaSawIt) {
  api_.SetLease("gpuadmit", "gpuadmit",
                {{"metadata", {{"resourceVersion", "7"}}},
                 {"spec",
                  {{"holderIdentity", "ghost"},
                   {"leaseDurationSeconds", 15},
                   {"renewTime", "2020-01-01T00:00:00.000000Z"},
                   {"leaseTransitions", 4}}}});
  Replica b(api_, clock_, log_, metrics_, "b");
  // An old renewTime means nothing: the holder's clock is not ours. The lease runs from now.
  EXPECT_FALSE(b.elector->TryAcquireOrRenew());
  clock_.Advance(seconds(14));
  EXPECT_FALSE(b.elector->TryAcquireOrRenew());
  EXPECT_EQ(b.elector->Leader(), "ghost");
  clock_.Advance(seconds(2));
  EXPECT_EQ(b.elector->Leader(), "");  // expired: no leader known
  EXPECT_TRUE(b.elector->TryAcquireOrRenew());
  auto lease = api_.Lease("gpuadmit", "gpuadmit");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 5);
}

TEST_F(LeaderElectorTest, AWriteThatLosesTheRaceOnResourceVersionDoesNotLead) {
  Replica a(api_, clock_, log_, metrics_, "a"), b(api_, clock_, log_, metrics_, "b");
  api_.SetLease("gpuadmit", "gpuadmit",
                {{"metadata", {{"resourceVersion", "3"}}},
                 {"spec", {{"holderIdentity", ""}, {"leaseDurationSeconds", 1}}}});
  // b read version 3 as well, but a writes first: b's update meets 409 and b follows.
  auto read = b.lock->Get();
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(a.elector->TryAcquireOrRenew());
  LeaderRecord mine;
  mine.holder = "b";
  mine.lease_duration_s = 15;
  auto wrote = b.lock->Update(mine, read.value().version);
  ASSERT_TRUE(wrote.ok()) << wrote.error().message;
  EXPECT_EQ(wrote.value(), LeaseLock::Write::kConflict);
  EXPECT_FALSE(b.elector->TryAcquireOrRenew());
  EXPECT_EQ(b.elector->Leader(), "a");
}

TEST_F(LeaderElectorTest, StopReleasesTheLeaseAndAnotherReplicaTakesItAtItsNextRetry) {
  SteadyClock clock;
  LeaderElectionOptions fast;
  fast.retry_period = milliseconds(50);
  fast.lease_duration = seconds(15);  // a takeover well before this can only be the release
  Replica a(api_, clock, log_, metrics_, "a", fast);
  a.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a.elector->IsLeader(); }));
  EXPECT_NE(metrics_.Render().find("\ngpuadmit_leader 1\n"), std::string::npos);

  Metrics b_metrics;
  auto before_b = api_.requests();  // a's connection
  Replica b(api_, clock, log_, b_metrics, "b", fast);
  b.elector->Start();
  // b has read the Lease three times (its retries) and keeps following.
  ASSERT_TRUE(
      WaitUntil([&] { return LeaseRequestsFromNewConnections(before_b, api_.requests()) >= 3; }));
  EXPECT_FALSE(b.elector->IsLeader());
  EXPECT_EQ(b.elector->Leader(), "a");

  auto stopped = std::chrono::steady_clock::now();
  a.elector->Stop();
  // Released: nobody holds it (or b already does).
  EXPECT_NE((*api_.Lease("gpuadmit", "gpuadmit"))["spec"]["holderIdentity"], "a");
  ASSERT_TRUE(WaitUntil([&] { return b.elector->IsLeader(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, seconds(2));
  EXPECT_EQ(metrics_.Value(Counter::kLeaderTransitions), 1u);
  EXPECT_NE(metrics_.Render().find("\ngpuadmit_leader 0\n"), std::string::npos);
  b.elector->Stop();
}

TEST_F(LeaderElectorTest, ALeaderThatCannotRenewWithinTheDeadlineStopsLeading) {
  SteadyClock clock;
  LeaderElectionOptions fast;
  fast.retry_period = milliseconds(20);
  fast.renew_deadline = milliseconds(200);
  Replica a(api_, clock, log_, metrics_, "a", fast);
  a.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a.elector->IsLeader(); }));
  api_.SetOutage(503);
  EXPECT_TRUE(WaitUntil([&] { return !a.elector->IsLeader(); }));
  api_.SetOutage(0);
  a.elector->Stop();
}

}  // namespace
}  // namespace gpuadmit
