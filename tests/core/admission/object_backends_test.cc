// DecodeAdmissionReview reads the object off simdjson's tape through JsonView, while the
// simulator, the inventory and the tests read nlohmann values through the same JsonView. These
// tests hold the two to one answer: every fixture review, under every policy and cluster below,
// is answered exactly as when its object and oldObject are nlohmann values copied off the tape.
#include "core/admission/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/admission/review.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::AddBoundPods;
using testing::DemoCluster;
using testing::ReadSourceFile;
using testing::RequestOverValues;
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

TEST(DecodeAdmissionReview, AnswersEveryFixtureAsTheObjectsValuesDo) {
  json exhausted = DemoCluster();
  AddBoundPods(exhausted, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);
  InventorySnapshot demo = SnapshotOf(DemoCluster());
  InventorySnapshot no_2g = SnapshotOf(exhausted);
  const std::vector<const InventorySnapshot*> clusters = {&demo, &no_2g};
  const std::vector<Policy> policies = {Policy{}, ExamplePolicy(), EveryStagePolicy()};
  int compared = 0;
  int patched = 0;
  int refused = 0;
  for (const std::string& body : Bodies()) {
    auto tape = DecodeAdmissionReview(body);
    if (!tape.ok()) {
      ++refused;
      continue;
    }
    ASSERT_NE(tape.value().tape, nullptr);
    RequestOverValues values(tape.value());
    for (const Policy& policy : policies) {
      for (const InventorySnapshot* cluster : clusters) {
        ReviewContext context{*cluster, policy};
        context.explain = true;
        ReviewAnswer a = ReviewRequest(tape.value(), context);
        ReviewAnswer b = ReviewRequest(values.request, context);
        EXPECT_EQ(a.body, b.body) << body.substr(0, 200);
        EXPECT_EQ(a.trail, b.trail) << body.substr(0, 200);
        ++compared;
        if (a.kind == AdmissionOutcome::Kind::kPatch) ++patched;
      }
    }
  }
  // The comparison means something only if many reviews were planned and patched, and the bad
  // corpus was refused.
  EXPECT_GT(compared, 200);
  EXPECT_GT(patched, 40);
  EXPECT_GT(refused, 5);
}

TEST(DecodeAdmissionReview, ReadsTheObjectOffTheTape) {
  auto r =
      DecodeAdmissionReview(ReadSourceFile("tests/fixtures/gpu/kubectl-pod-multi-container.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(r.value().tape, nullptr);
  JsonView object = r.value().object;
  EXPECT_EQ(object.At({"metadata", "name"}).string(), "gpu-pod");
  EXPECT_TRUE(object["spec"]["initContainers"][0]["resources"].is_object());
  EXPECT_TRUE(r.value().old_object.is_null());
}

TEST(DecodeAdmissionReview, ViewsTheWholeObjectAsTheBodyHasIt) {
  std::string body = ReadSourceFile("tests/fixtures/admission/ome-inferenceservice-create.json");
  auto r = DecodeAdmissionReview(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().object.ToJson(), json::parse(body)["request"]["object"]);
}

TEST(DecodeAdmissionReview, RefusesBadJsonAndNamesTheByteWhereItCan) {
  const std::string review = ReadSourceFile("bench/fixtures/pod-review-3k.json");
  std::string deep = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":)";
  for (int depth : {kMaxJsonDepth - 2, kMaxJsonDepth - 1}) {
    std::string body = deep + std::string(depth, '[') + std::string(depth, ']') + "}";
    EXPECT_EQ(DecodeAdmissionReview(body).error().message, "AdmissionReview has no request object");
  }
  for (int depth : {kMaxJsonDepth, kMaxJsonDepth + 1}) {
    std::string body = deep + std::string(depth, '[') + std::string(depth, ']') + "}";
    EXPECT_EQ(DecodeAdmissionReview(body).error().message, "JSON nests deeper than 512 levels");
  }
  const std::pair<std::string, std::string> cases[] = {
      {review.substr(0, review.size() / 2), "invalid JSON: A string is opened, but never closed."},
      {R"({"request":{"uid":"\udc00"}})", "invalid JSON: Problem while parsing a string"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","n":1e400})",
       "invalid JSON: a number that is malformed or past 64 bits"},
      {R"({"a":18446744073709551616})", "invalid JSON: a number that is malformed or past 64 bits"},
      {"[1 2]",
       "invalid JSON: The JSON document has an improper structure: missing or superfluous "
       "commas, braces, missing keys, etc."},
      {"{\"uid\":\"a\xff\"}", "invalid JSON at byte 9: invalid UTF-8"},
      {std::string("{}\0{\"x\":1}", 10), "invalid JSON at byte 2: NUL byte"},
      {"{\"uid\":\"04dc7a5e-e1f1-4e3" + std::string(20, '\x1b') + "4-8d65\"}",
       "invalid JSON at byte 25: an unescaped control character"},
  };
  for (const auto& [body, why] : cases) {
    auto r = DecodeAdmissionReview(body);
    ASSERT_FALSE(r.ok()) << body.substr(0, 80);
    EXPECT_EQ(r.error().message, why) << body.substr(0, 80);
  }
}

TEST(DecodeAdmissionReview, ReadsAZeroWithAnExponentPast308AsZero) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  std::string body = review.dump();
  body.insert(body.rfind('}'), R"(,"zero":0e550)");
  auto r = DecodeAdmissionReview(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().uid, review["request"]["uid"]);
}

TEST(DecodeAdmissionReview, DecodesALargeBodyOffTheTapeAsWell) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  review["request"]["object"]["metadata"]["annotations"]["big"] = std::string(300 * 1024, 'x');
  std::string body = review.dump();
  ASSERT_GT(body.size(), 300u * 1024);
  auto r = DecodeAdmissionReview(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(r.value().tape, nullptr);
  EXPECT_EQ(r.value().object.At({"spec", "dnsPolicy"}).string(), "ClusterFirst");
  EXPECT_EQ(r.value().object.At({"metadata", "annotations", "big"}).string().size(),
            300u * 1024);
  InventorySnapshot demo = SnapshotOf(DemoCluster());
  Policy policy = ExamplePolicy();
  ReviewContext context{demo, policy};
  RequestOverValues values(r.value());
  EXPECT_EQ(ReviewRequest(r.value(), context).body, ReviewRequest(values.request, context).body);
}

TEST(DecodeAdmissionReview, CountsTheDepthOfEverySubtreeStatusToo) {
  json review = json::parse(ReadSourceFile("bench/fixtures/pod-review-3k.json"));
  review["request"]["object"]["status"]["deep"] =
      json::parse(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'));
  auto r = DecodeAdmissionReview(review.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
}

}  // namespace
}  // namespace gpuadmit
