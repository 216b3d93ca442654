// DecodeForDecisions keeps only the fields decisions read. These tests hold it to that: every
// fixture review, under every policy and cluster below, is answered exactly as from the whole
// decoded object, and what it refuses it refuses with DecodeAdmissionReview's own error.
#include "core/admission/review_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/admission/review.h"
#include "core/json/json_tape.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::DemoCluster;
using testing::ReadSourceFile;
using testing::SnapshotOf;

// Every JSON file under tests/fixtures/<dir>, sorted.
std::vector<std::string> FixturesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GPUADMIT_SOURCE_DIR) +
                                                               "/tests/fixtures/" + dir)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && !name.ends_with(".md")) out.push_back(dir + "/" + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The reviews to compare: the recorded ones, the GPU ones, the benchmark's and the bad corpus.
std::vector<std::string> Bodies() {
  std::vector<std::string> bodies;
  for (const char* dir : {"admission", "gpu", "bad"}) {
    for (const std::string& f : FixturesIn(dir))
      bodies.push_back(ReadSourceFile("tests/fixtures/" + f));
  }
  bodies.push_back(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  return bodies;
}

Policy ExamplePolicy() {
  auto parsed = ParsePolicy(ReadSourceFile("manifests/examples/policy.yaml"));
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? std::move(parsed).value() : Policy{};
}

// The example policy with every worker default on and node affinity required: the stages that
// read volumes, volumeMounts, tolerations and affinity all write patches.
Policy EveryStagePolicy() {
  Policy p = ExamplePolicy();
  p.worker_defaults.shm_size = "2Gi";
  p.worker_defaults.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"}};
  p.placement.affinity = AffinityMode::kRequired;
  return p;
}

TEST(DecodeForDecisions, AnswersEveryFixtureAsTheWholeObjectDoes) {
  json exhausted = DemoCluster();
  AddBoundPods(exhausted, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  InventorySnapshot demo = SnapshotOf(DemoCluster());
  InventorySnapshot no_2g = SnapshotOf(exhausted);
  const std::vector<const InventorySnapshot*> clusters = {&demo, &no_2g};
  const std::vector<Policy> policies = {Policy{}, ExamplePolicy(), EveryStagePolicy()};
  int compared = 0;
  int patched = 0;
  for (const std::string& body : Bodies()) {
    auto whole = DecodeAdmissionReview(body);
    auto lean = DecodeForDecisions(body);
    ASSERT_EQ(lean.ok(), whole.ok()) << body.substr(0, 200);
    if (!whole.ok()) {
      EXPECT_EQ(lean.error().message, whole.error().message);
      continue;
    }
    EXPECT_NE(lean.value().tape, nullptr);
    for (const Policy& policy : policies) {
      for (const InventorySnapshot* cluster : clusters) {
        ReviewContext context{*cluster, policy};
        context.explain = true;
        ReviewAnswer a = ReviewRequest(lean.value(), context);
        ReviewAnswer b = ReviewRequest(whole.value(), context);
        EXPECT_EQ(a.body, b.body) << body.substr(0, 200);
        EXPECT_EQ(a.trail, b.trail) << body.substr(0, 200);
        ++compared;
        if (a.kind == AdmissionOutcome::Kind::kPatch) ++patched;
      }
    }
  }
  // The comparison means something only if many reviews were planned and patched.
  EXPECT_GT(compared, 200);
  EXPECT_GT(patched, 40);
}

TEST(DecodeForDecisions, ReadsTheObjectOffTheTapeAndBuildsNoDom) {
  auto r =
      DecodeForDecisions(ReadSourceFile("tests/fixtures/gpu/kubectl-pod-multi-container.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(r.value().tape, nullptr);
  EXPECT_TRUE(r.value().object.is_null());
  EXPECT_TRUE(r.value().old_object.is_null());
  JsonView object = r.value().Object();
  EXPECT_EQ(object.At({"metadata", "name"}).string(), "gpu-pod");
  EXPECT_TRUE(object["spec"]["initContainers"][0]["resources"].is_object());
  EXPECT_TRUE(r.value().OldObject().is_null());
}

TEST(DecodeForDecisions, ViewsTheWholeObjectAsDecodeAdmissionReviewBuildsIt) {
  std::string body = ReadSourceFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  auto lean = DecodeForDecisions(body);
  auto whole = DecodeAdmissionReview(body);
  ASSERT_TRUE(lean.ok() && whole.ok());
  // Whole, managedFields included (DecodeAdmissionReview drops them).
  json object = lean.value().Object().ToJson();
  EXPECT_TRUE(object["metadata"].contains("managedFields"));
  object["metadata"].erase("managedFields");
  EXPECT_EQ(object, whole.value().object);
}

TEST(DecodeForDecisions, RefusesWhatDecodeAdmissionReviewRefusesWithItsWords) {
  const std::string review = ReadSourceFile("bench/fixtures/pod-review-3k.json");
  std::string deep = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":)";
  for (int depth : {kMaxJsonDepth - 2, kMaxJsonDepth - 1, kMaxJsonDepth, kMaxJsonDepth + 1}) {
    std::string body = deep + std::string(depth, '[') + std::string(depth, ']') + "}";
    auto whole = DecodeAdmissionReview(body);
    auto lean = DecodeForDecisions(body);
    EXPECT_EQ(lean.ok(), whole.ok()) << depth;
    if (!whole.ok() && !lean.ok()) {
      EXPECT_EQ(lean.error().message, whole.error().message);
    }
  }
  for (std::string body :
       {review.substr(0, review.size() / 2), std::string(R"({"request":{"uid":"\udc00"}})"),
        std::string(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","n":1e400})"),
        std::string(R"({"a":18446744073709551616})"), std::string("[1 2]")}) {
    auto whole = DecodeAdmissionReview(body);
    auto lean = DecodeForDecisions(body);
    ASSERT_FALSE(whole.ok()) << body.substr(0, 80);
    ASSERT_FALSE(lean.ok()) << body.substr(0, 80);
    EXPECT_EQ(lean.error().message, whole.error().message);
  }
}

TEST(DecodeForDecisions, ReadsAZeroWithAnExponentPast308AsZeroWhereRapidJsonRefusesIt) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  std::string body = review.dump();
  body.insert(body.rfind('}'), R"(,"zero":0e550)");
  auto lean = DecodeForDecisions(body);
  ASSERT_TRUE(lean.ok()) << lean.error().message;
  EXPECT_EQ(lean.value().uid, review["request"]["uid"]);
  auto whole = DecodeAdmissionReview(body);
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.error().message.find("Number too big"), std::string::npos);
}

TEST(DecodeForDecisions, DecodesALargeBodyOffTheTapeAsWellAndAnswersAsTheWholeObjectDoes) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  review["request"]["object"]["metadata"]["annotations"]["big"] = std::string(300 * 1024, 'x');
  std::string body = review.dump();
  ASSERT_GT(body.size(), 300u * 1024);
  auto lean = DecodeForDecisions(body);
  ASSERT_TRUE(lean.ok()) << lean.error().message;
  ASSERT_NE(lean.value().tape, nullptr);
  EXPECT_EQ(lean.value().Object().At({"spec", "dnsPolicy"}).string(), "ClusterFirst");
  EXPECT_EQ(lean.value().Object().At({"metadata", "annotations", "big"}).string().size(),
            300u * 1024);
  auto whole = DecodeAdmissionReview(body);
  ASSERT_TRUE(whole.ok());
  InventorySnapshot demo = SnapshotOf(DemoCluster());
  Policy policy = ExamplePolicy();
  ReviewContext context{demo, policy};
  EXPECT_EQ(ReviewRequest(lean.value(), context).body, ReviewRequest(whole.value(), context).body);
}

TEST(DecodeForDecisions, CountsTheDepthOfEverySubtreeWhereTheWholeDecoderSkipsStatus) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  review["request"]["object"]["status"]["deep"] =
      json::parse(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'));
  std::string body = review.dump();
  auto lean = DecodeForDecisions(body);
  ASSERT_FALSE(lean.ok());
  EXPECT_EQ(lean.error().message,
            "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  EXPECT_TRUE(DecodeAdmissionReview(body).ok());  // it skips status without counting its depth
}

TEST(DecodeForDecisions, RefusesAnIntegerPast64BitsThatTheWholeDecoderReadsAsADouble) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  std::string body = review.dump();
  body.insert(body.rfind('}'), R"(,"extra":123456789012345678901234567890)");
  auto lean = DecodeForDecisions(body);
  ASSERT_FALSE(lean.ok());
  EXPECT_EQ(lean.error().message, "invalid JSON: a number that is malformed or past 64 bits");
  EXPECT_TRUE(DecodeAdmissionReview(body).ok());
}

}  // namespace
}  // namespace gpuadmit
