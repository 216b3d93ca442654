#include "bench/load/open_loop_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace gpuadmit::bench {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(OpenLoopSchedule, OneLaneIsDueEveryOneOverTheRate) {
  OpenLoopSchedule lane(1000, 1, 0);
  EXPECT_EQ(lane.Due(0), nanoseconds(0));
  EXPECT_EQ(lane.Due(1), milliseconds(1));
  EXPECT_EQ(lane.Due(999), milliseconds(999));
  EXPECT_EQ(lane.Due(10000), seconds(10));
}

TEST(OpenLoopSchedule, LanesTakeTurnsSoTogetherTheyKeepTheTotalRate) {
  OpenLoopSchedule lane0(5000, 2, 0), lane1(5000, 2, 1);
  EXPECT_EQ(lane0.Due(0), microseconds(0));
  EXPECT_EQ(lane1.Due(0), microseconds(200));
  EXPECT_EQ(lane0.Due(1), microseconds(400));
  EXPECT_EQ(lane1.Due(1), microseconds(600));
  std::vector<nanoseconds> merged;
  for (uint64_t k = 0; k < 500; ++k) {
    merged.push_back(lane0.Due(k));
    merged.push_back(lane1.Due(k));
  }
  std::sort(merged.begin(), merged.end());
  for (size_t i = 0; i < merged.size(); ++i) {
    ASSERT_EQ(merged[i], microseconds(200 * static_cast<int64_t>(i))) << "request " << i;
  }
}

TEST(OpenLoopSchedule, DueBeforeCountsTheRequestsDueStrictlyEarlier) {
  OpenLoopSchedule lane(1000, 1, 0);
  EXPECT_EQ(lane.DueBefore(nanoseconds(-5)), 0u);
  EXPECT_EQ(lane.DueBefore(nanoseconds(0)), 0u);
  EXPECT_EQ(lane.DueBefore(nanoseconds(1)), 1u);  // request 0, due at 0
  EXPECT_EQ(lane.DueBefore(milliseconds(1)), 1u);
  EXPECT_EQ(lane.DueBefore(milliseconds(1) + nanoseconds(1)), 2u);
  EXPECT_EQ(lane.DueBefore(seconds(10)), 10000u);
}

TEST(OpenLoopSchedule, AWindowHoldsRateTimesDurationRequestsOverAllLanes) {
  // run.sh's points: 1 s of warm-up, then 10 s measured, at 1,000 and 5,000 req/s on 2 threads.
  for (double rate : {1000.0, 5000.0, 333.0}) {
    uint64_t in_window = 0;
    for (int lane = 0; lane < 2; ++lane) {
      OpenLoopSchedule s(rate, 2, lane);
      in_window += s.DueBefore(seconds(11)) - s.DueBefore(seconds(1));
    }
    EXPECT_EQ(in_window, static_cast<uint64_t>(rate * 10)) << rate << " req/s";
  }
}

TEST(OpenLoopSchedule, DueBeforeIsExactAgainstDueAtRatesThatDoNotDivideASecond) {
  for (double rate : {3.0, 7919.3, 123456.0}) {
    for (int lanes : {1, 3}) {
      OpenLoopSchedule s(rate, lanes, lanes - 1);
      for (uint64_t k : {0ull, 1ull, 2ull, 999ull, 123457ull, 10000019ull}) {
        ASSERT_EQ(s.DueBefore(s.Due(k)), k) << rate << " " << lanes << " " << k;
        ASSERT_EQ(s.DueBefore(s.Due(k) + nanoseconds(1)), k + 1)
            << rate << " " << lanes << " " << k;
      }
    }
  }
}

TEST(LatencyFromDue, CountsTheWaitForAFreeConnectionBeforeTheSend) {
  auto due = std::chrono::steady_clock::time_point(seconds(100));
  // Sent 5 ms late (no connection was free), answered 300 us after the send.
  auto done = due + milliseconds(5) + microseconds(300);
  EXPECT_EQ(LatencyFromDueUs(due, done), 5300u);
}

TEST(LatencyFromDue, IsZeroForAnAnswerNotAfterItsDueTime) {
  auto due = std::chrono::steady_clock::time_point(seconds(100));
  EXPECT_EQ(LatencyFromDueUs(due, due), 0u);
  EXPECT_EQ(LatencyFromDueUs(due, due - microseconds(3)), 0u);
}

}  // namespace
}  // namespace gpuadmit::bench
