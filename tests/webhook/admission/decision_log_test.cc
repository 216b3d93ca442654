#include "webhook/admission/decision_log.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace gpuadmit {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kT0 = 29'833'333 * kMinute;  // a whole minute, in 2026

DecisionRecord At(int64_t ms, ReviewOutcome outcome, std::string uid = "") {
  return {.at_unix_ms = ms, .uid = std::move(uid), .outcome = outcome};
}

TEST(DecisionLog, KeepsTheLastCapacityRecordsNewestFirst) {
  DecisionLog log(3);
  EXPECT_TRUE(log.Recent().empty());
  for (int i = 0; i < 5; ++i) log.Record(At(kT0 + i, ReviewOutcome::kPatched, std::to_string(i)));
  std::vector<DecisionRecord> recent = log.Recent();
  ASSERT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent[0].uid, "4");
  EXPECT_EQ(recent[1].uid, "3");
  EXPECT_EQ(recent[2].uid, "2");
}

TEST(DecisionLog, CountsOutcomesOverTheLastFifteenWholeMinutes) {
  DecisionLog log;
  log.Record(At(kT0, ReviewOutcome::kAllowed));                   // 20 minutes before: out
  log.Record(At(kT0 + 6 * kMinute, ReviewOutcome::kFailOpen));    // 14 minutes before: in
  log.Record(At(kT0 + 6 * kMinute - 1, ReviewOutcome::kDenied));  // the minute before it: out
  log.Record(At(kT0 + 19 * kMinute, ReviewOutcome::kPatched));
  log.Record(At(kT0 + 20 * kMinute + 59'999, ReviewOutcome::kPatched));
  OutcomeCounts counts = log.Outcomes(kT0 + 20 * kMinute + 30'000);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kAllowed)], 0u);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kDenied)], 0u);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kFailOpen)], 1u);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kPatched)], 2u);
  // Fifteen minutes on, everything has left the window.
  OutcomeCounts later = log.Outcomes(kT0 + 36 * kMinute);
  for (uint64_t c : later) EXPECT_EQ(c, 0u);
}

TEST(DecisionLog, AMinuteSlotReusedFifteenMinutesLaterStartsFromZero) {
  DecisionLog log;
  log.Record(At(kT0, ReviewOutcome::kDenied));
  log.Record(At(kT0 + 15 * kMinute, ReviewOutcome::kAllowed));  // same slot, new minute
  OutcomeCounts counts = log.Outcomes(kT0 + 15 * kMinute);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kDenied)], 0u);
  EXPECT_EQ(counts[static_cast<size_t>(ReviewOutcome::kAllowed)], 1u);
}

TEST(DecisionLog, ConcurrentRecordsAreAllCounted) {
  DecisionLog log(50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) log.Record(At(kT0, ReviewOutcome::kPatched));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(log.Outcomes(kT0)[static_cast<size_t>(ReviewOutcome::kPatched)], 4000u);
  EXPECT_EQ(log.Recent().size(), 50u);
}

TEST(ReviewOutcomeName, NamesEachOutcome) {
  EXPECT_EQ(ReviewOutcomeName(ReviewOutcome::kAllowed), "allowed");
  EXPECT_EQ(ReviewOutcomeName(ReviewOutcome::kFailClosed), "fail-closed");
}

}  // namespace
}  // namespace gpuadmit
