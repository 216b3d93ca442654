#include "webhook/log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

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
  Logger log(LogLevel::kInfo, milliseconds(1));
  std::string out = Written([&] {
    log.Info("old");
    std::this_thread::sleep_for(milliseconds(5));  // time only moves on: the hold is over
    log.Info("new");
  });
  EXPECT_EQ(Lines(out), 2u) << out;
}

TEST(Logger, HeldLinesGoOutWhen64KiBWait) {
  Logger log(LogLevel::kInfo, hours(1));
  const std::string value(1000, 'x');
  std::string out = Written([&] {
    for (int i = 0; i < 100; ++i) log.Info("review", {{"v", value}});
  });
  EXPECT_GE(out.size(), 64u * 1024);
  EXPECT_LT(Lines(out), 100u);  // the rest still waits
  EXPECT_EQ(Lines(out) + Lines(Written([&] { log.Flush(); })), 100u);
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
