#include "webhook/telemetry/log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_clock.h"

namespace gpuadmit {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

// What `log` wrote to stderr while `f` ran.
template <typename F>
std::string Written(F&& f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(Logger, WritesEachLineAtOnceWithoutAHoldTime) {
  Logger log(LogLevel::kInfo);
  std::string out = Written([&] { log.Info("review", {{"uid", "a b"}, {"outcome", "patch"}}); });
  EXPECT_NE(out.find(R"( level=info msg=review uid="a b" outcome=patch)"), std::string::npos)
      << out;
  EXPECT_EQ(Lines(out), 1u);
  EXPECT_EQ(Written([&] { log.Debug("not enabled"); }), "");
}

TEST(Logger, LinesStartWithTheUtcTimeToTheMillisecond) {
  using std::chrono::sys_days;
  using namespace std::chrono_literals;
  auto at = [](std::chrono::system_clock::time_point t) {
    std::string out = "x";
    AppendLogTimestamp(out, t);
    return out;
  };
  sys_days day = std::chrono::year{2026} / 11 / 21;
  EXPECT_EQ(at(day + 14h + 7s + 5ms), "x2026-11-21T14:00:07.005Z");
  // The same second again, then the next one: the text kept for a second is not reused past it.
  EXPECT_EQ(at(day + 14h + 7s + 999ms), "x2026-11-21T14:00:07.999Z");
  EXPECT_EQ(at(day + 14h + 8s), "x2026-11-21T14:00:08.000Z");
  EXPECT_EQ(at(day + 14h + 7s + 120ms), "x2026-11-21T14:00:07.120Z");
  EXPECT_EQ(at(sys_days{std::chrono::year{1969} / 12 / 31} + 23h + 59min + 59s + 250ms),
            "x1969-12-31T23:59:59.250Z");

  Logger log(LogLevel::kInfo);
  auto before = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  std::string out = Written([&] { log.Info("now"); });
  auto after = std::chrono::system_clock::now();
  std::string first = at(before), last = at(after);
  std::string stamp = out.substr(0, first.size() - 1);
  EXPECT_GE("x" + stamp, first) << out;  // same width: text order is time order
  EXPECT_LE("x" + stamp, last) << out;
}

TEST(Logger, HeldInfoLinesGoOutAtFlushInTheirOrder) {
  Logger log(LogLevel::kInfo, hours(1));
  EXPECT_EQ(Written([&] {
              log.Info("first");
              log.Info("second");
            }),
            "");
  std::string out = Written([&] { log.Flush(); });
  EXPECT_EQ(Lines(out), 2u);
  EXPECT_LT(out.find("msg=first"), out.find("msg=second"));
  EXPECT_EQ(Written([&] { log.Flush(); }), "");
}

TEST(Logger, AWarningIsWrittenAtOnceAfterTheHeldLines) {
  Logger log(LogLevel::kInfo, hours(1));
  std::string out = Written([&] {
    log.Info("held");
    log.Warn("problem");
  });
  EXPECT_EQ(Lines(out), 2u);
  EXPECT_LT(out.find("msg=held"), out.find("msg=problem"));
}

TEST(Logger, HeldLinesGoOutWhenTheOldestHasWaitedItsTime) {
  testing::FakeClock clock;
  Logger log(LogLevel::kInfo, milliseconds(5), clock);
  std::string out = Written([&] {
    log.Info("old");
    clock.Advance(milliseconds(4));
    log.Info("held");  // the oldest has waited 4 ms of 5
  });
  EXPECT_EQ(out, "");
  out = Written([&] {
    clock.Advance(milliseconds(1));
    log.Info("new");  // the oldest has waited its 5 ms: all three go out
  });
  EXPECT_EQ(Lines(out), 3u) << out;
}

TEST(Logger, HeldLinesGoOutWhen256KiBWait) {
  Logger log(LogLevel::kInfo, hours(1));
  const std::string value(1000, 'x');
  std::string out = Written([&] {
    for (int i = 0; i < 300; ++i) log.Info("review", {{"v", value}});
  });
  EXPECT_GE(out.size(), 256u * 1024);
  EXPECT_LT(Lines(out), 300u);  // the rest still waits
  EXPECT_EQ(Lines(out) + Lines(Written([&] { log.Flush(); })), 300u);
}

// Threads logging while others write (the batches go out of the lock): every line is written
// once and whole, and each thread's lines in the order it logged them.
TEST(Logger, ThreadsLoggingWhileOthersWriteLoseNoLineAndKeepTheirOrder) {
  constexpr int kThreads = 4;
  constexpr int kEach = 3000;
  std::string out = Written([] {
    Logger log(LogLevel::kInfo, hours(1));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&log, t] {
        const std::string pad(200, 'p');  // 256 KiB fills every ~1,000 lines: writes overlap
        for (int i = 0; i < kEach; ++i) {
          log.Info("line", {{"t", std::to_string(t)}, {"i", std::to_string(i)}, {"pad", pad}});
          if (i % 500 == 0) log.Flush();
        }
      });
    }
    for (std::thread& th : threads) th.join();
  });  // the destructor flushes what is left
  ASSERT_EQ(Lines(out), static_cast<size_t>(kThreads * kEach));
  std::vector<int> next(kThreads, 0);
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    std::string line = out.substr(at, end - at);
    at = end + 1;
    size_t t_at = line.find(" t=");
    size_t i_at = line.find(" i=");
    ASSERT_NE(t_at, std::string::npos) << line;
    ASSERT_NE(i_at, std::string::npos) << line;
    int t = std::stoi(line.substr(t_at + 3));
    int i = std::stoi(line.substr(i_at + 3));
    ASSERT_EQ(i, next[t]) << "thread " << t << " out of order: " << line;
    ++next[t];
  }
}

TEST(Logger, DestructionWritesWhatWaits) {
  std::string out = Written([] {
    Logger log(LogLevel::kInfo, hours(1));
    log.Info("last words");
  });
  EXPECT_NE(out.find("msg=\"last words\""), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(Logger, QuotesValuesWithSpacesQuotesEqualsOrControlsAndEscapesInside) {
  Logger log(LogLevel::kInfo);
  std::string out = Written([&] {
    log.Info("m", {{"plain", "a\\b/c"},
                   {"spaced", "a b"},
                   {"quote", "say \"hi\""},
                   {"eq", "k=v"},
                   {"ctl", "x\ny\tz\\"},
                   {"empty", ""}});
  });
  EXPECT_NE(
      out.find(
          R"( plain=a\b/c spaced="a b" quote="say \"hi\"" eq="k=v" ctl="x\ny\x09z\\" empty="")"),
      std::string::npos)
      << out;
}

}  // namespace
}  // namespace gpuadmit
