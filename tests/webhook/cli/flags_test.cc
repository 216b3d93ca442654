#include "webhook/cli/flags.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

TEST(Flags, AcceptsSpacedAndEqualsFormsSwitchesAndPositionals) {
  const char* argv[] = {"--policy", "p.yaml", "--cluster=c.json", "--explain", "review.json"};
  Flags f({"policy", "cluster"}, {"explain"});
  ASSERT_EQ(f.Parse(5, const_cast<char**>(argv), 0), "");
  EXPECT_EQ(f.Value("policy"), "p.yaml");
  EXPECT_EQ(f.Value("cluster"), "c.json");
  EXPECT_TRUE(f.Has("explain"));
  EXPECT_EQ(f.positional(), std::vector<std::string>{"review.json"});
}

TEST(Flags, UnknownFlagsAndMissingValuesAreErrors) {
  const char* unknown[] = {"--polcy", "x"};
  EXPECT_EQ(Flags({"policy"}, {}).Parse(2, const_cast<char**>(unknown), 0), "unknown flag --polcy");
  const char* missing[] = {"--policy"};
  EXPECT_EQ(Flags({"policy"}, {}).Parse(1, const_cast<char**>(missing), 0),
            "flag --policy needs a value");
}

TEST(Flags, ASecondValueIsAnErrorUnlessTheFlagRepeats) {
  const char* twice[] = {"--dcgm-file", "a.txt", "--dcgm-file=b.txt"};
  EXPECT_EQ(Flags({"dcgm-file"}, {}).Parse(3, const_cast<char**>(twice), 0),
            "flag --dcgm-file given twice; it takes one value");
  Flags window({"dcgm-file"}, {}, {"dcgm-file"});
  ASSERT_EQ(window.Parse(3, const_cast<char**>(twice), 0), "");
  EXPECT_EQ(window.Values("dcgm-file"), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(SplitHostPort, ReadsV4V6AndBarePorts) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:8443", host, port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8443);
  ASSERT_TRUE(SplitHostPort("[::1]:0", host, port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(SplitHostPort(":9443", host, port));
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_FALSE(SplitHostPort("localhost", host, port));
  EXPECT_FALSE(SplitHostPort("localhost:99999", host, port));
  EXPECT_FALSE(SplitHostPort("localhost:8x", host, port));
}

}  // namespace
}  // namespace gpuadmit
