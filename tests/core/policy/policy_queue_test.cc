// The queue section of the policy (core/policy/policy_queue.cc): values, defaults, and every
// problem reported at its line and column.
#include <gtest/gtest.h>

#include "core/policy/policy.h"

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

TEST(QueuePolicy, DefaultsToOffWithFiveMinutesForEveryNamespace) {
  QueuePolicy want;
  EXPECT_FALSE(want.enabled);
  EXPECT_EQ(want.timeout_seconds, 300);
  EXPECT_TRUE(want.namespaces.empty());
  auto p = ParsePolicy("queue: {}");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.value().queue == want);
}

TEST(QueuePolicy, ReadsEnabledTimeoutAsAGoDurationAndNamespaces) {
  auto p = ParsePolicy("queue:\n  enabled: true\n  timeout: 1h30m10s\n  namespaces: [ml, batch]\n");
  ASSERT_TRUE(p.ok());
  QueuePolicy want{true, 5410, {"ml", "batch"}};
  EXPECT_TRUE(p.value().queue == want);
  for (auto [text, seconds] : std::vector<std::pair<std::string, int64_t>>{
           {"90s", 90}, {"5m", 300}, {"2h", 7200}, {"300", 300}, {"1m1s", 61}}) {
    auto q = ParsePolicy("queue: {timeout: " + text + "}");
    ASSERT_TRUE(q.ok()) << text;
    EXPECT_EQ(q.value().queue.timeout_seconds, seconds) << text;
  }
}

TEST(QueuePolicy, QueuesListedNamespacesOrEveryOneWhenNoneIsListedOnlyWhenEnabled) {
  QueuePolicy off{false, 300, {}};
  QueuePolicy all{true, 300, {}};
  QueuePolicy some{true, 300, {"ml"}};
  EXPECT_FALSE(off.Queues("ml"));
  EXPECT_TRUE(all.Queues("anything"));
  EXPECT_TRUE(some.Queues("ml"));
  EXPECT_FALSE(some.Queues("web"));
}

TEST(QueuePolicy, ReportsBadValuesAtTheirLineAndColumn) {
  EXPECT_EQ(
      Issues("queue:\n  enabled: sometimes\n  timeout: 5 minutes\n  namespaces: [Bad_NS]\n"
             "  size: 3\n"),
      (std::vector<std::string>{
          "2:12: queue.enabled must be true or false, not \"sometimes\"",
          "3:12: queue.timeout must be a duration such as 90s, 5m or 1h30m, not \"5 minutes\"",
          "4:16: queue.namespaces[0] must be a namespace name, not \"Bad_NS\"",
          "5:3: unknown key \"size\" in queue"}));
  EXPECT_EQ(
      Issues("queue: {timeout: 0s}"),
      (std::vector<std::string>{"1:18: queue.timeout must be between 1s and 86400s, not 0s"}));
  EXPECT_EQ(
      Issues("queue: {timeout: 25h}"),
      (std::vector<std::string>{"1:18: queue.timeout must be between 1s and 86400s, not 90000s"}));
  EXPECT_EQ(Issues("queue: {timeout: 5d}"),
            (std::vector<std::string>{
                "1:18: queue.timeout must be a duration such as 90s, 5m or 1h30m, not \"5d\""}));
  EXPECT_EQ(Issues("queue: [on]"),
            (std::vector<std::string>{"1:8: queue must be a map, not a list"}));
}

}  // namespace
}  // namespace gpuadmit
