#include "core/policy.h"

#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

std::vector<std::string> Issues(const std::string& yaml) {
  auto p = ParsePolicy(yaml);
  std::vector<std::string> out;
  if (p.ok()) return out;
  for (const PolicyIssue& i : p.error()) {
    out.push_back(std::to_string(i.line) + ":" + std::to_string(i.column) + ": " + i.message);
  }
  return out;
}

TEST(ParsePolicy, TheShippedExamplePolicyIsValid) {
  auto p = ParsePolicy(testing::ReadSourceFile("manifests/examples/policy.yaml"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().annotation_prefix, "gpuadmit.io");
  EXPECT_EQ(p.value().failure_mode, FailureMode::kOpen);
  EXPECT_TRUE(p.value().mig.fallback);
  EXPECT_EQ(p.value().mig.on_exhausted, ExhaustedAction::kWarn);
  EXPECT_EQ(p.value().exempt_namespaces, std::vector<std::string>{"kube-system"});
}

TEST(ParsePolicy, AnEmptyDocumentIsTheDefaultPolicy) {
  auto p = ParsePolicy("");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().Annotation("fallback"), "gpuadmit.io/fallback");
}

TEST(ParsePolicy, ReadsEveryKnob) {
  auto p = ParsePolicy(R"(
annotationPrefix: gpu.example.com
failureMode: closed
exemptNamespaces: [a, b]
migFallback:
  enabled: false
  onExhausted: deny
)");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().annotation_prefix, "gpu.example.com");
  EXPECT_EQ(p.value().failure_mode, FailureMode::kClosed);
  EXPECT_TRUE(p.value().IsExempt("b"));
  EXPECT_FALSE(p.value().IsExempt("kube-system"));
  EXPECT_FALSE(p.value().mig.fallback);
  EXPECT_EQ(p.value().mig.on_exhausted, ExhaustedAction::kDeny);
}

TEST(ParsePolicy, ReportsEveryProblemWithLineAndColumn) {
  EXPECT_EQ(Issues(R"(annotationPrefix: "Not_A_Domain"
failureMode: sometimes
migFallback:
  enabled: maybe
  extra: 1
colour: blue
)"),
            (std::vector<std::string>{
                "6:1: unknown key \"colour\" in the policy",
                "1:19: annotationPrefix \"Not_A_Domain\" is not a DNS subdomain",
                "2:14: failureMode must be one of open, closed, not \"sometimes\"",
                "5:3: unknown key \"extra\" in migFallback",
                "4:12: migFallback.enabled must be true or false",
            }));
}

TEST(ParsePolicy, SyntaxErrorsAndWrongShapesAreIssuesNotExceptions) {
  EXPECT_EQ(Issues("a: [1, 2\nb: c").size(), 1u);
  EXPECT_EQ(Issues("- 1\n- 2"), std::vector<std::string>{"1:1: the policy must be a YAML map"});
  EXPECT_EQ(Issues("exemptNamespaces: kube-system"),
            std::vector<std::string>{"1:19: exemptNamespaces must be a list of namespace names"});
}

}  // namespace
}  // namespace gpuadmit
