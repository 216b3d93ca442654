#include "webhook/kube/server_version.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/fakes/fake_kube_api_server.h"

namespace gpuadmit {
namespace {

TEST(ServerVersion, ReadsMajorMinorAndGitVersion) {
  auto v = ParseServerVersion(R"({"major":"1","minor":"30","gitVersion":"v1.30.2"})");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v.value().major, 1);
  EXPECT_EQ(v.value().minor, 30);
  EXPECT_EQ(v.value().git, "v1.30.2");
  EXPECT_TRUE(v.value().AtLeast(1, 30));
  EXPECT_FALSE(v.value().AtLeast(1, 31));
  EXPECT_TRUE(v.value().AtLeast(0, 99));
}

TEST(ServerVersion, AManagedClustersMinorMayEndInPlus) {
  auto v = ParseServerVersion(R"({"major":"1","minor":"29+","gitVersion":"v1.29.4-eks-1"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value().minor, 29);
  EXPECT_FALSE(v.value().AtLeast(1, 30));
}

TEST(ServerVersion, RefusesWhatIsNotAVersion) {
  EXPECT_FALSE(ParseServerVersion("<html>").ok());
  auto v = ParseServerVersion(R"({"major":"","minor":"","gitVersion":"v0.0.0-master"})");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("v0.0.0-master"), std::string::npos);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ServerVersion, ReadsTheApiServers) {
  testing::FakeKubeApiServer api("t0k");
  KubeConfig config;
  config.server = api.url();
  config.certificate_authority = {ReadFile(api.ca_file()), api.ca_file()};
  config.token = "t0k";
  auto client = KubeClient::Create(config).value();
  api.SetVersion("1", "29+", "v1.29.8-gke.1");
  auto v = ReadServerVersion(*client);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v.value().minor, 29);
  EXPECT_EQ(v.value().git, "v1.29.8-gke.1");
  api.SetOutage(503);
  auto down = ReadServerVersion(*client);
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message.find("503"), std::string::npos);
}

}  // namespace
}  // namespace gpuadmit
