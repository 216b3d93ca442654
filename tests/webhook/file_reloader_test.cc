#include "webhook/file_reloader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tests/fakes/config_map_dir.h"

namespace gpuadmit {
namespace {

using std::chrono::milliseconds;
using testing::ConfigMapDir;

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

}  // namespace
}  // namespace gpuadmit
