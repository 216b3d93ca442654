// The policy's jobDefaults through Review: written into a GPU Job's (or a CronJob's jobTemplate)
// spec where it has none, never over what the Job says, and not again for the patched object.
#include "core/admission/job_defaults.h"

#include <gtest/gtest.h>

#include <string>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::DemoCluster;
using testing::ReadSourceFile;
using testing::SnapshotOf;

Policy WithJobDefaults() {
  Policy p;
  p.placement.enabled = false;
  p.job_defaults = {.ttl_seconds_after_finished = 3600,
                    .active_deadline_seconds = 86400,
                    .backoff_limit = 3};
  return p;
}

// The operations of the answer to `body` whose path starts with `prefix`.
json OpsUnder(const std::string& body, const Policy& policy, const std::string& prefix) {
  auto r = Review(body, SnapshotOf(DemoCluster()), policy);
  EXPECT_TRUE(r.ok());
  json ops = json::array();
  for (const json& op : testing::PatchOf(json::parse(r.value().body)["response"])) {
    std::string path = op["path"];
    if (path.rfind(prefix, 0) == 0 && path.find("/template") == std::string::npos) {
      ops.push_back(op);
    }
  }
  return ops;
}

TEST(JobDefaults, AreAddedToAGpuJobWhereItsSpecHasNone) {
  std::string job = ReadSourceFile("tests/fixtures/gpu/kubectl-job.json");
  EXPECT_EQ(OpsUnder(job, WithJobDefaults(), "/spec/"), json::parse(R"([
      {"op":"add","path":"/spec/ttlSecondsAfterFinished","value":3600},
      {"op":"add","path":"/spec/activeDeadlineSeconds","value":86400},
      {"op":"add","path":"/spec/backoffLimit","value":3}])"));
  EXPECT_EQ(OpsUnder(job, Policy{}, "/spec/"), json::array());  // none set: nothing written

  std::string cron = ReadSourceFile("tests/fixtures/gpu/kubectl-cronjob.json");
  json ops = OpsUnder(cron, WithJobDefaults(), "/spec/jobTemplate/spec/");
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0]["path"], "/spec/jobTemplate/spec/ttlSecondsAfterFinished");
}

TEST(JobDefaults, NeverOverwriteWhatTheJobSaysAndAreNotAddedTwice) {
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-job.json"));
  review["request"]["object"]["spec"]["backoffLimit"] = 0;
  json ops = OpsUnder(review.dump(), WithJobDefaults(), "/spec/");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1]["path"], "/spec/activeDeadlineSeconds");

  review["request"]["object"] = review["request"]["object"].patch(ops);
  EXPECT_EQ(OpsUnder(review.dump(), WithJobDefaults(), "/spec/"), json::array());
}

TEST(JobDefaults, AreForGpuJobsAtCreateOnly) {
  json review = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-job.json"));
  json no_gpu = review;
  no_gpu["request"]["object"]["spec"]["template"]["spec"]["containers"][0].erase("resources");
  EXPECT_EQ(OpsUnder(no_gpu.dump(), WithJobDefaults(), "/spec/"), json::array());
  json deployment = json::parse(ReadSourceFile("tests/fixtures/gpu/kubectl-deployment.json"));
  EXPECT_EQ(OpsUnder(deployment.dump(), WithJobDefaults(), "/spec/"), json::array());
}

TEST(JobDefaults, ThePolicyReadsThemAndRefusesValuesTheApiserverWould) {
  auto parsed = ParsePolicy(
      "jobDefaults:\n  ttlSecondsAfterFinished: 3600\n  activeDeadlineSeconds: 86400\n"
      "  backoffLimit: 3\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value().job_defaults, WithJobDefaults().job_defaults);
  for (const char* bad : {"jobDefaults:\n  activeDeadlineSeconds: 0\n",
                          "jobDefaults:\n  backoffLimit: -1\n",
                          "jobDefaults:\n  ttlSecondsAfterFinished: 1h\n",
                          "jobDefaults:\n  ttl: 5\n"}) {
    EXPECT_FALSE(ParsePolicy(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpuadmit
