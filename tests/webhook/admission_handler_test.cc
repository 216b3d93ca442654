#include "webhook/admission_handler.h"

#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

class AdmissionHandlerTest : public ::testing::Test {
 protected:
  AdmissionHandlerTest() : log_(LogLevel::kError), handler_(log_, metrics_) {
    handler_.SetPolicy(std::make_shared<const Policy>());
    handler_.SetSnapshot(
        std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  }

  Logger log_;
  Metrics metrics_;
  AdmissionHandler handler_;
};

TEST_F(AdmissionHandlerTest, TransportRulesGiveTheirStatusAndAOneLineJsonReason) {
  std::string good = testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json");
  struct Case {
    std::string content_type;
    std::string body;
    int status;
    std::string error;
  } cases[] = {
      {"application/json", "", 400, "empty body"},
      {"application/json", std::string(kMaxReviewBody + 1, ' '), 413, "body larger than 7 MiB"},
      {"text/plain", good, 415, "content type \"text/plain\" is not application/json"},
      {"", good, 415, "content type \"\" is not application/json"},
      {"application/json", "{", 400, "invalid JSON at byte 1: Missing a name for object member."},
  };
  for (const Case& c : cases) {
    HandlerAnswer a = handler_.Handle(c.content_type, c.body);
    EXPECT_EQ(a.status, c.status) << c.error;
    EXPECT_EQ(json::parse(a.body), json({{"error", c.error}}));
  }
  EXPECT_EQ(metrics_.Value(Counter::kBadRequests), 2u);
  EXPECT_EQ(metrics_.Value(Counter::kPayloadTooLarge), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kUnsupportedMedia), 2u);
}

TEST_F(AdmissionHandlerTest, JsonContentTypeMayCarryParametersAndAnyCase) {
  EXPECT_TRUE(IsJsonContentType("application/json"));
  EXPECT_TRUE(IsJsonContentType("application/json; charset=utf-8"));
  EXPECT_TRUE(IsJsonContentType("Application/JSON;charset=UTF-8"));
  EXPECT_FALSE(IsJsonContentType("application/jsonx"));
  EXPECT_FALSE(IsJsonContentType("application/yaml"));
}

TEST_F(AdmissionHandlerTest, ReviewsAreAnsweredAndCountedByOutcome) {
  HandlerAnswer a = handler_.Handle("application/json",
                                    testing::ReadSourceFile("tests/fixtures/gpu/kubectl-pod.json"));
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(json::parse(a.body)["response"]["allowed"], true);
  handler_.Handle("application/json",
                  testing::ReadSourceFile("tests/fixtures/bad/object-wrong-type.json"));
  EXPECT_EQ(metrics_.Value(Counter::kReviewsAllowed), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kReviewsFailOpen), 1u);
  EXPECT_NE(metrics_.Render().find("gpuadmit_admission_reviews_total{outcome=\"fail_open\"} 1\n"),
            std::string::npos);
}

TEST_F(AdmissionHandlerTest, ReadyOnlyOncePolicyAndInventoryAreLoaded) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler fresh(log, metrics);
  EXPECT_FALSE(fresh.Ready());
  fresh.SetPolicy(std::make_shared<const Policy>());
  EXPECT_FALSE(fresh.Ready());
  fresh.SetSnapshot(std::make_shared<const InventorySnapshot>());
  EXPECT_TRUE(fresh.Ready());
}

}  // namespace
}  // namespace gpuadmit
