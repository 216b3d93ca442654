#include "webhook/os/file_reloader.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "tests/fakes/config_map_dir.h"

namespace gpuadmit {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ConfigMapDir;

// Counts on_change calls and lets the test wait, bounded, for the count to reach a value.
class CallCounter {
 public:
  void operator()() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
    }
    changed_.notify_all();
  }
  // True once at least `n` calls were made, within `timeout`.
  bool WaitFor(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return calls_ >= n; });
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int calls_ = 0;
};

TEST(FileReloader, AnUntouchedFileIsNoChange) {
  ConfigMapDir dir("policy.yaml");
  ASSERT_TRUE(dir.Publish("a: 1\n"));
  int calls = 0;
  FileReloader reloader(dir.Path(), milliseconds(1000), [&] { ++calls; });
  EXPECT_FALSE(reloader.CheckNow());
  EXPECT_FALSE(reloader.CheckNow());
  EXPECT_EQ(calls, 0);
}

TEST(FileReloader, SeesAConfigMapSwappingItsDataSymlinkThoughTheFileLinkIsUntouched) {
  ConfigMapDir dir("policy.yaml");
  ASSERT_TRUE(dir.Publish("a: 1\n"));
  int calls = 0;
  FileReloader reloader(dir.Path(), milliseconds(1000), [&] { ++calls; });
  ASSERT_TRUE(dir.Publish("a: 1\n"));  // the same bytes, in a new version directory
  EXPECT_TRUE(reloader.CheckNow());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(reloader.CheckNow());  // seen once, not again
  EXPECT_EQ(calls, 1);
}

TEST(FileReloader, SeesAFileReplacedByRenameAndAFileThatDisappears) {
  ConfigMapDir dir("policy.yaml");
  ASSERT_TRUE(dir.Publish("a: 1\n"));
  std::string plain = dir.Path() + ".plain";
  std::ofstream(plain) << "a: 1\n";
  int calls = 0;
  FileReloader reloader(plain, milliseconds(1000), [&] { ++calls; });
  std::ofstream(plain + ".new") << "a: 2\n";
  ASSERT_EQ(std::rename((plain + ".new").c_str(), plain.c_str()), 0);
  EXPECT_TRUE(reloader.CheckNow());
  ASSERT_EQ(std::remove(plain.c_str()), 0);
  EXPECT_TRUE(reloader.CheckNow());
  EXPECT_EQ(calls, 2);
}

// The poll interval is an hour: a call within the 10 s bound can only come from the watch.
TEST(FileReloader, AStartedReloaderSeesADataSymlinkSwapAtOnceNotAtTheNextPoll) {
  ConfigMapDir dir("tls.crt");
  ASSERT_TRUE(dir.Publish("v1"));
  CallCounter counter;
  FileReloader reloader(dir.Path(), hours(1), [&] { counter(); });
  reloader.Start();
  ASSERT_TRUE(dir.Publish("v2"));
  EXPECT_TRUE(counter.WaitFor(1, seconds(10)));
  ASSERT_TRUE(dir.Publish("v3"));
  EXPECT_TRUE(counter.WaitFor(2, seconds(10)));
  reloader.Stop();
  EXPECT_EQ(counter.calls(), 2);  // one per version, however many events a swap makes
}

TEST(FileReloader, AStartedReloaderSeesARenameOverADeletionAndTheFileComingBackAtOnce) {
  ConfigMapDir dir("unused");  // only for its temporary directory
  std::string plain = std::filesystem::path(dir.Path()).parent_path() / "policy.yaml";
  std::ofstream(plain) << "a: 1\n";
  CallCounter counter;
  FileReloader reloader(plain, hours(1), [&] { counter(); });
  reloader.Start();
  std::ofstream(plain + ".new") << "a: 2\n";
  ASSERT_EQ(std::rename((plain + ".new").c_str(), plain.c_str()), 0);
  EXPECT_TRUE(counter.WaitFor(1, seconds(10)));
  ASSERT_EQ(std::remove(plain.c_str()), 0);
  EXPECT_TRUE(counter.WaitFor(2, seconds(10)));
  std::ofstream(plain) << "a: 3\n";  // written in place, a new file
  EXPECT_TRUE(counter.WaitFor(3, seconds(10)));
}

TEST(FileReloader, StopEndsTheThreadPromptlyThoughThePollIntervalIsAnHour) {
  ConfigMapDir dir("policy.yaml");
  ASSERT_TRUE(dir.Publish("a: 1\n"));
  CallCounter counter;
  FileReloader reloader(dir.Path(), hours(1), [&] { counter(); });
  reloader.Start();
  auto before = std::chrono::steady_clock::now();
  reloader.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(1));
  EXPECT_EQ(counter.calls(), 0);
}

TEST(FileReloader, AFileWhoseDirectoryAppearsAfterStartIsStillSeen) {
  ConfigMapDir dir("policy.yaml");
  ASSERT_TRUE(dir.Publish("a: 1\n"));
  // Nothing to watch at Start: a 10 ms poll sees the file, or adds the watch that does.
  std::string root = std::filesystem::path(dir.Path()).parent_path();
  std::string later = root + "/later/policy.yaml";
  CallCounter counter;
  FileReloader reloader(later, milliseconds(10), [&] { counter(); });
  reloader.Start();
  std::filesystem::create_directory(root + "/later");
  std::ofstream(later) << "a: 2\n";
  EXPECT_TRUE(counter.WaitFor(1, seconds(10)));
}

}  // namespace
}  // namespace gpuadmit
