#include "bench/load/process_cpu.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuadmit::bench {
namespace {

namespace fs = std::filesystem;

TEST(ParseSchedstatRunNs, ReadsTheFirstFieldOfTheLine) {
  EXPECT_EQ(ParseSchedstatRunNs("179663539 12305880 683\n"), 179663539u);
  EXPECT_EQ(ParseSchedstatRunNs("0 0 0"), 0u);
  EXPECT_EQ(ParseSchedstatRunNs(""), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunNs("x 1 2"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunNs("-5 1 2"), std::nullopt);
}

// A directory laid out as /proc: PID/task/TID/schedstat.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "gpuadmit-proc-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Thread(int pid, int tid, const std::string& schedstat) {
    fs::path dir = root_ / std::to_string(pid) / "task" / std::to_string(tid);
    fs::create_directories(dir);
    std::ofstream(dir / "schedstat") << schedstat;
  }

  fs::path root_;
};

TEST_F(FakeProc, SumsEveryThreadOfEveryProcess) {
  Thread(10, 10, "1000 5 1\n");
  Thread(10, 11, "2000 5 1\n");
  Thread(20, 20, "30000 5 1\n");
  EXPECT_EQ(ProcessesCpuNs({10}, root_.string()), 3000u);
  EXPECT_EQ(ProcessesCpuNs({10, 20}, root_.string()), 33000u);
  EXPECT_EQ(ProcessesCpuNs({}, root_.string()), 0u);
}

TEST_F(FakeProc, IsNothingForAProcessThatIsNotThereOrALineThatDoesNotParse) {
  Thread(10, 10, "1000 5 1\n");
  EXPECT_EQ(ProcessesCpuNs({10, 30}, root_.string()), std::nullopt);
  Thread(10, 11, "garbage\n");
  EXPECT_EQ(ProcessesCpuNs({10}, root_.string()), std::nullopt);
}

TEST_F(FakeProc, CountsAThreadGoneSinceTheListingAsNothing) {
  Thread(10, 10, "1000 5 1\n");
  fs::create_directories(root_ / "10" / "task" / "11");  // listed, but its schedstat is gone
  EXPECT_EQ(ProcessesCpuNs({10}, root_.string()), 1000u);
}

TEST(ProcessesCpuNs, GrowsWhileThisProcessComputes) {
  std::optional<uint64_t> before = ProcessesCpuNs({::getpid()});
  if (!before) GTEST_SKIP() << "/proc/PID/task/TID/schedstat cannot be read here";
  // Spin until the kernel has charged more time to this process; bounded, not timed.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::optional<uint64_t> after = before;
  volatile uint64_t sink = 0;
  while (after && *after <= *before && std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 1000000; ++i) sink = sink + static_cast<uint64_t>(i);
    after = ProcessesCpuNs({::getpid()});
  }
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(*after, *before);
}

}  // namespace
}  // namespace gpuadmit::bench
