#include "webhook/cli/leader_routing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace gpuadmit {
namespace {

TEST(IsDryRunReview, ReadsTheRequestsDryRunKeyWhateverTheSpacing) {
  EXPECT_TRUE(IsDryRunReview(R"({"request":{"uid":"u","dryRun":true}})"));
  EXPECT_TRUE(IsDryRunReview("{\"request\":{\"dryRun\" :\n\ttrue}}"));
  EXPECT_FALSE(IsDryRunReview(R"({"request":{"uid":"u","dryRun":false}})"));
  EXPECT_FALSE(IsDryRunReview(R"({"request":{"uid":"u"}})"));
  // The word as a value, not a key, is not the flag.
  EXPECT_FALSE(IsDryRunReview(R"({"request":{"name":"dryRun","x":true}})"));
}

TEST(AddReviewWarning, AppendsToTheResponsesWarningsOrStartsThem) {
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                     R"("response":{"uid":"u","allowed":true}})";
  AddReviewWarning(body, "first");
  AddReviewWarning(body, "second");
  auto doc = nlohmann::json::parse(body);
  EXPECT_EQ(doc["response"]["warnings"], nlohmann::json::array({"first", "second"}));
  EXPECT_EQ(doc["response"]["uid"], "u");
  EXPECT_EQ(doc["response"]["allowed"], true);

  std::string not_a_review = "{\"error\":\"x\"}";
  AddReviewWarning(not_a_review, "ignored");
  EXPECT_EQ(not_a_review, "{\"error\":\"x\"}");
}

}  // namespace
}  // namespace gpuadmit
