// The webhook when what it reads over the network fails: the Kubernetes API down at start or
// answering 500s (before the first sync, and mid-watch), Prometheus down at start, going down, or
// slow. Each is wired as `gpuadmit serve` wires it, and each case shows two things through
// AdmissionHandler::Handle with a real GPU review: every review is still answered (fail-open
// with a warning where nothing can be decided), and once the dependency is back the real
// decision returns without a restart. Mounted files going away: file_faults_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/fake_prometheus.h"
#include "tests/fakes/review_probe.h"
#include "tests/fakes/stderr_capture.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/wait_until.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/kube/kube_source.h"
#include "webhook/os/read_file.h"
#include "webhook/sources/prometheus_source.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeKubeApiServer;
using testing::HealthyAnswer;
using testing::kMigReview;
using testing::kPatience;
using testing::kWholeGpuReview;
using testing::Patched;
using testing::ReadSourceFile;
using testing::ReviewUntil;

// The fail-open answer to the kubectl-pod review: admitted unchanged, and told why.
json StaleAnswer() {
  json review = testing::ReadJsonFile(kMigReview);
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response",
           {{"uid", review["request"]["uid"]},
            {"allowed", true},
            {"warnings",
             {"gpuadmit: the GPU inventory is stale (watch down); Pod default/gpu-pod "
              "passes unchanged"}}}}};
}

std::vector<json> ItemsOfKind(const json& list, const std::string& kind) {
  std::vector<json> out;
  for (const json& item : list["items"]) {
    if (item["kind"] == kind) out.push_back(item);
  }
  return out;
}

class KubeApiFaults : public ::testing::Test {
 protected:
  KubeApiFaults() {
    ServeCluster(testing::DemoCluster(), "100");
    handler_.SetPolicy(std::make_shared<const Policy>());
  }

  void ServeCluster(const json& cluster, const std::string& resource_version) {
    api_.SetObjects("nodes", ItemsOfKind(cluster, "Node"), resource_version);
    api_.SetObjects("pods", ItemsOfKind(cluster, "Pod"), resource_version);
  }

  // serve's live inventory, with test-sized backoff (5-20 ms) and `staleness_limit`.
  void StartSource(milliseconds staleness_limit = seconds(60)) {
    KubeConfig config;
    config.server = api_.url();
    config.certificate_authority = PemSource{ReadWholeFile(api_.ca_file()).value(), api_.ca_file()};
    config.token = "secret";
    KubeInventoryOptions options;
    options.publish_interval = milliseconds(1);
    options.staleness_limit = staleness_limit;
    for (ReflectorOptions* r : {&options.nodes, &options.pods}) {
      r->initial_backoff = milliseconds(5);
      r->max_backoff = milliseconds(20);
    }
    auto source = StartKubeSource(config, clock_, log_, publisher_, ledger_, options);
    ASSERT_TRUE(source.ok()) << source.error().message;
    source_ = std::move(source).value();
  }

  // True once the API was asked for `resource` at least `count` times, within kPatience.
  bool WaitForRequests(const std::string& resource, size_t count) {
    return testing::WaitUntil(
        [&] {
          size_t n = 0;
          for (const auto& r : api_.requests()) n += r.target.rfind("/api/v1/" + resource, 0) == 0;
          return n >= count;
        },
        kPatience);
  }

  testing::StderrCapture log_lines_;  // first: outlives every thread that logs
  FakeKubeApiServer api_{"secret"};
  SteadyClock clock_;
  Logger log_{LogLevel::kInfo};
  Metrics metrics_;
  SharedLedger ledger_{clock_, kDefaultReservationTtl};
  AdmissionHandler handler_{log_, metrics_, &ledger_};
  SnapshotPublisher publisher_{handler_, metrics_, &ledger_, {}};
  KubeSource source_;  // last: stops before what it uses
};

TEST_F(KubeApiFaults, DownAtStartAnswersFailOpenWithAWarningAndSyncsOnceUpWithoutRestart) {
  api_.Stop();  // nothing listens: connections are refused
  StartSource();
  ASSERT_TRUE(log_lines_.WaitFor("msg=\"list failed\" path=/api/v1/nodes", kPatience, 2));
  ASSERT_TRUE(log_lines_.WaitFor("msg=\"list failed\" path=/api/v1/pods", kPatience, 2));
  EXPECT_FALSE(handler_.Ready());
  EXPECT_EQ(json::parse(handler_.Handle("application/json", ReadSourceFile(kMigReview)).body),
            StaleAnswer());
  EXPECT_EQ(metrics_.Value(Counter::kSkippedStale), 1u);
  EXPECT_EQ(log_lines_.Count("msg=\"GPU decision skipped: inventory stale\""), 1u);

  api_.Restart();
  json answer = ReviewUntil(handler_, kMigReview, Patched);
  EXPECT_EQ(answer, HealthyAnswer(testing::DemoCluster(), kMigReview));
  EXPECT_TRUE(handler_.Ready());
  EXPECT_EQ(log_lines_.Count("msg=\"inventory synced\""), 1u);
}

TEST_F(KubeApiFaults, ServerErrorsBeforeTheFirstSyncAnswerFailOpenUntilTheApiHeals) {
  api_.SetOutage(500);
  StartSource();
  ASSERT_TRUE(WaitForRequests("nodes", 2));  // refused, and retried
  ASSERT_TRUE(WaitForRequests("pods", 2));
  EXPECT_FALSE(handler_.Ready());
  EXPECT_EQ(json::parse(handler_.Handle("application/json", ReadSourceFile(kMigReview)).body),
            StaleAnswer());

  api_.SetOutage(0);
  EXPECT_EQ(ReviewUntil(handler_, kMigReview, Patched),
            HealthyAnswer(testing::DemoCluster(), kMigReview));
  EXPECT_TRUE(handler_.Ready());
}

// The watch drops and every request meets a 500: decisions go on from the last snapshot, turn
// fail-open once the watch has been down past the staleness limit, and come back, on the
// cluster as it is now, when the API heals.
TEST_F(KubeApiFaults, ServerErrorsMidWatchKeepTheLastSnapshotThenFailOpenThenRecover) {
  StartSource(/*staleness_limit=*/milliseconds(300));
  json before = ReviewUntil(handler_, kMigReview, Patched);
  ASSERT_EQ(before, HealthyAnswer(testing::DemoCluster(), kMigReview));
  ASSERT_TRUE(api_.WaitForWatches("pods", 1, kPatience));

  api_.SetOutage(500);
  api_.DropWatch("pods");
  ASSERT_TRUE(log_lines_.WaitFor("msg=\"watch refused\" path=/api/v1/pods status=500", kPatience))
      << log_lines_.Text();
  EXPECT_TRUE(handler_.Ready());  // the last snapshot is still there
  // Meanwhile the cluster moves on: gpu-medium's 7 free mig-2g.20gb are taken, and the watch
  // that resumes will be told to relist (410) to learn it.
  json moved = testing::DemoCluster();
  testing::AddBoundPods(moved, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  ServeCluster(moved, "500");
  api_.PushWatchEvent("pods", FakeKubeApiServer::GoneEvent());

  EXPECT_EQ(ReviewUntil(handler_, kMigReview, [](const json& a) { return !Patched(a); }),
            StaleAnswer());

  // Healed: the watch resumes (its first answers still on the old snapshot), relists, and the
  // moved cluster's decision follows: a fallback to 1g.10gb.
  api_.SetOutage(0);
  json moved_answer = HealthyAnswer(moved, kMigReview);
  ASSERT_NE(moved_answer, before);
  EXPECT_EQ(ReviewUntil(handler_, kMigReview, [&](const json& a) { return a == moved_answer; }),
            moved_answer);
}

// Two nodes of two T4s; a whole-GPU pod, sharing off: placement goes to the most idle node, and
// with no metrics (every GPU idle) the name decides: gpu-a.
class PrometheusFaults : public ::testing::Test {
 protected:
  PrometheusFaults() {
    auto policy = std::make_shared<Policy>();
    policy->sharing.enabled = false;
    policy_ = policy;
    handler_.SetPolicy(policy_);
    handler_.SetSnapshot(std::make_shared<const InventorySnapshot>(testing::SnapshotOf(cluster_)));
  }

  // Node `busy`'s GPUs are nearly full, the other node's idle.
  void MakeBusy(const std::string& busy) {
    for (const std::string node : {"gpu-a", "gpu-b"}) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        bool b = node == busy;
        prometheus_.SetGpu(node, gpu,
                           {{"DCGM_FI_DEV_GPU_UTIL", b ? 95 : 0},
                            {"DCGM_FI_DEV_FB_USED", b ? 14000 : 0},
                            {"DCGM_FI_DEV_FB_FREE", b ? 1000 : 15000}});
      }
    }
  }

  // As serve wires --prometheus: the reader the flag makes, polled every 20 ms here (15 s in
  // serve), each good reading handed to the handler.
  void StartPoller() {
    auto reader = MakeGpuMetricsReader(prometheus_.url(), "");
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    GpuMetricsPollerOptions options;
    options.source = prometheus_.url();
    options.interval = milliseconds(20);
    options.on_publish = [this](std::shared_ptr<const ClusterGpuMetrics> m) {
      handler_.SetGpuMetrics(std::move(m));
    };
    poller_ = std::make_unique<GpuMetricsPoller>(std::move(reader).value(), clock_, log_, options);
    poller_->Start();
  }

  // The node the whole-GPU pod is sent to, once that is `node` (at most kPatience).
  std::string PlacedOn(const std::string& node) {
    json answer = ReviewUntil(handler_, kWholeGpuReview,
                              [&](const json& a) { return PreferredNode(a) == node; });
    return PreferredNode(answer);
  }

  static std::string PreferredNode(const json& answer) {
    for (const json& op : testing::PatchOf(answer["response"])) {
      if (op["path"] != "/spec/affinity") continue;
      return op["value"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
               ["preference"]["matchExpressions"][0]["values"][0];
    }
    return "";
  }

  testing::StderrCapture log_lines_;
  testing::FakePrometheus prometheus_;
  json cluster_ = testing::ListOf({testing::GpuNode("gpu-a", 2), testing::GpuNode("gpu-b", 2)});
  std::shared_ptr<const Policy> policy_;
  SteadyClock clock_;
  Logger log_{LogLevel::kInfo};
  Metrics metrics_;
  SharedLedger ledger_{clock_, kDefaultReservationTtl};
  AdmissionHandler handler_{log_, metrics_, &ledger_};
  std::unique_ptr<GpuMetricsPoller> poller_;  // last: stops before what it uses
};

TEST_F(PrometheusFaults, DownAtStartDecidesWithEveryGpuIdleThenUsesMetricsOnceUp) {
  MakeBusy("gpu-a");
  prometheus_.Stop();  // connections refused
  StartPoller();
  ASSERT_TRUE(log_lines_.WaitFor("msg=\"gpu metrics source failing; no metrics yet\"", kPatience));
  EXPECT_EQ(json::parse(handler_.Handle("application/json", ReadSourceFile(kWholeGpuReview)).body),
            HealthyAnswer(cluster_, kWholeGpuReview, policy_));
  EXPECT_EQ(PlacedOn("gpu-a"), "gpu-a");

  prometheus_.Restart();
  EXPECT_EQ(PlacedOn("gpu-b"), "gpu-b");  // gpu-a's GPUs are busy
  // Logged once the reading is handed over: waited for, not counted at once.
  EXPECT_TRUE(log_lines_.WaitFor("msg=\"gpu metrics source back\"", kPatience));
}

TEST_F(PrometheusFaults, GoingDownKeepsTheLastGoodMetricsAndComingBackRefreshesThem) {
  MakeBusy("gpu-a");
  StartPoller();
  ASSERT_EQ(PlacedOn("gpu-b"), "gpu-b");

  prometheus_.Stop();
  ASSERT_TRUE(log_lines_.WaitFor(
      "msg=\"gpu metrics source failing; keeping the last good metrics\"", kPatience));
  EXPECT_EQ(PlacedOn("gpu-b"), "gpu-b");

  MakeBusy("gpu-b");
  prometheus_.Restart();
  EXPECT_EQ(PlacedOn("gpu-a"), "gpu-a");
}

TEST_F(PrometheusFaults, ASlowPrometheusHoldsNoReviewAndItsLateAnswerIsUsed) {
  MakeBusy("gpu-a");
  StartPoller();
  ASSERT_EQ(PlacedOn("gpu-b"), "gpu-b");

  prometheus_.Hold();
  ASSERT_TRUE(prometheus_.WaitForHeld(1, kPatience));  // a poll is stuck on its query
  MakeBusy("gpu-b");                                   // what its late answer will say
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(PlacedOn("gpu-b"), "gpu-b");  // answered at once, on the last good metrics
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(1));

  prometheus_.Release();
  EXPECT_EQ(PlacedOn("gpu-a"), "gpu-a");
}

}  // namespace
}  // namespace gpuadmit
