#include "core/json/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadJsonFile;

std::string Written(const json& value) {
  std::string out;
  EXPECT_TRUE(AppendJson(value, out));
  return out;
}

TEST(AppendJson, WritesRealDocumentsThatParseBackToTheSameValue) {
  for (const char* fixture :
       {"tests/fixtures/gpu/kubectl-pod-multi-container.json",
        "tests/fixtures/admission/wrapped-deployment-create-minikube.json",
        "manifests/examples/demo-cluster.json", "bench/fixtures/pod-review-3k.json"}) {
    json doc = ReadJsonFile(fixture);
    EXPECT_EQ(json::parse(Written(doc)), doc) << fixture;
  }
}

TEST(AppendJson, WritesAPatchByteForByteAsDumpDoes) {
  json ops = json::array(
      {{{"op", "add"},
        {"path", "/metadata/annotations/gpuadmit.io~1fallback"},
        {"value", "2g.20gb->1g.10gb"}},
       {{"op", "add"},
        {"path", "/spec/affinity"},
        {"value",
         {{"nodeAffinity",
           {{"preferredDuringSchedulingIgnoredDuringExecution",
             json::array({{{"weight", 100},
                           {"preference",
                            {{"matchExpressions",
                              json::array({{{"key", "kubernetes.io/hostname"},
                                            {"operator", "In"},
                                            {"values", json::array({"gpu-medium"})}}})}}}}})}}}}}},
       {{"op", "remove"}, {"path", "/spec/containers/0/resources/limits/nvidia.com~1gpu"}},
       {{"op", "add"},
        {"path", "/x"},
        {"value",
         {1, -2, 2.5, 1e21, std::nan(""), true, nullptr, json::object(), json::array(),
          "é\"\\\n\t\b\f\r\x01\x1f\x7f/", UINT64_MAX, INT64_MIN}}}});
  EXPECT_EQ(Written(ops), ops.dump());
}

TEST(AppendJson, AppendsToWhatIsThere) {
  std::string out = "prefix:";
  ASSERT_TRUE(AppendJson(json{{"a", 1}}, out));
  EXPECT_EQ(out, R"(prefix:{"a":1})");
}

TEST(AppendJson, LeavesToDumpWhatIsNotUtf8AndBinary) {
  std::string out = "kept";
  EXPECT_FALSE(AppendJson(json::array({"ok", std::string("\xc3\x28")}), out));
  EXPECT_FALSE(AppendJson(json{{std::string("\xed\xa0\x80"), 1}}, out));  // a surrogate
  EXPECT_FALSE(AppendJson(json::binary({1, 2}), out));
  EXPECT_EQ(out, "kept");
}

}  // namespace
}  // namespace gpuadmit
