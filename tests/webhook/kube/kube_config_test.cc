// LoadKubeconfig and InClusterConfig over kubeconfig files and service-account directories
// written to a temporary directory.
#include "webhook/kube/kube_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace gpuadmit {
namespace {

const char kCaPem[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const char kCertPem[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
const char kKeyPem[] = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";
// The three PEM texts above, base64-encoded as kubectl writes *-data fields.
const char kCaData[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";
const char kCertData[] =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNMSUVOVAotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";
const char kKeyData[] =
    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCktFWQotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg==";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpuadmit-kubeconfig-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  // Writes `text` to `name` in the directory; returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Two clusters, two users, two contexts; `users_extra` is appended under the users list.
std::string Kubeconfig(const std::string& current_context, const std::string& users_extra = "") {
  return R"(apiVersion: v1
kind: Config
current-context: )" +
         current_context + R"(
clusters:
- name: dev
  cluster:
    server: https://dev.example:6443
    certificate-authority: ca.crt
- name: prod
  cluster:
    server: https://10.0.0.1:443
    certificate-authority-data: )" +
         kCaData + R"(
    tls-server-name: kubernetes.default.svc
contexts:
- name: dev-admin
  context: {cluster: dev, user: admin, namespace: team-a}
- name: prod-robot
  context: {cluster: prod, user: robot}
users:
- name: admin
  user:
    client-certificate: certs/admin.crt
    client-key-data: )" +
         kKeyData + R"(
- name: robot
  user:
    token: abc.def.ghi
)" + users_extra;
}

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("ca.crt", kCaPem);
    std::filesystem::create_directory(dir_.path() + "/certs");
    dir_.Write("certs/admin.crt", kCertPem);
  }
  TempDir dir_;
};

TEST_F(KubeconfigTest, CurrentContextSelectsItsClusterAndUserWithFilesFromTheKubeconfigDir) {
  std::string path = dir_.Write("config", Kubeconfig("dev-admin"));
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const KubeConfig& c = config.value();
  EXPECT_EQ(c.server, "https://dev.example:6443");
  EXPECT_EQ(c.namespace_name, "team-a");
  ASSERT_TRUE(c.certificate_authority);
  EXPECT_EQ(c.certificate_authority->pem, kCaPem);
  EXPECT_EQ(c.certificate_authority->origin, dir_.path() + "/ca.crt");
  ASSERT_TRUE(c.client_certificate && c.client_key);
  EXPECT_EQ(c.client_certificate->pem, kCertPem);
  EXPECT_EQ(c.client_key->pem, kKeyPem);
  EXPECT_EQ(c.client_key->origin, "kubeconfig " + path + ": user \"admin\": client-key-data");
  EXPECT_EQ(c.token, "");
  EXPECT_FALSE(c.insecure_skip_tls_verify);
}

TEST_F(KubeconfigTest, ExplicitContextWinsOverCurrentContextAndDataFieldsAreDecoded) {
  std::string path = dir_.Write("config", Kubeconfig("dev-admin"));
  auto config = LoadKubeconfig(path, "prod-robot");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const KubeConfig& c = config.value();
  EXPECT_EQ(c.server, "https://10.0.0.1:443");
  EXPECT_EQ(c.tls_server_name, "kubernetes.default.svc");
  ASSERT_TRUE(c.certificate_authority);
  EXPECT_EQ(c.certificate_authority->pem, kCaPem);
  EXPECT_EQ(c.token, "abc.def.ghi");
  EXPECT_EQ(c.namespace_name, "default");
  EXPECT_FALSE(c.client_certificate);
}

TEST_F(KubeconfigTest, MissingContextIsAnErrorNamingTheFileAndTheContext) {
  std::string path = dir_.Write("config", Kubeconfig("nope"));
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "kubeconfig " + path + ": context \"nope\" not found");
}

TEST_F(KubeconfigTest, MissingFileIsAnErrorNamingTheFile) {
  auto config = LoadKubeconfig(dir_.path() + "/absent");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "kubeconfig " + dir_.path() + "/absent: No such file or directory");
}

TEST_F(KubeconfigTest, MissingCertificateFileIsAnErrorNamingTheUserTheKeyAndTheFile) {
  std::filesystem::remove(dir_.path() + "/certs/admin.crt");
  std::string path = dir_.Write("config", Kubeconfig("dev-admin"));
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "kubeconfig " + path +
                                        ": user \"admin\": client-certificate: " + dir_.path() +
                                        "/certs/admin.crt: No such file or directory");
}

TEST_F(KubeconfigTest, ContextNamingAMissingClusterOrUserIsAnError) {
  std::string path = dir_.Write("config", R"(current-context: c
contexts:
- {name: c, context: {cluster: gone, user: u}}
)");
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "kubeconfig " + path + ": context \"c\": cluster \"gone\" not found");
}

TEST_F(KubeconfigTest, TokenFileIsNamedRelativeToTheKubeconfigAndInsecureIsRead) {
  std::string path = dir_.Write("config", R"(current-context: c
clusters:
- name: k
  cluster: {server: "localhost:6443", insecure-skip-tls-verify: true}
contexts:
- {name: c, context: {cluster: k, user: u}}
users:
- name: u
  user: {tokenFile: secrets/token}
)");
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().server, "https://localhost:6443");  // no scheme: https, as kubectl
  EXPECT_TRUE(config.value().insecure_skip_tls_verify);
  EXPECT_EQ(config.value().token_file, dir_.path() + "/secrets/token");
  EXPECT_FALSE(config.value().certificate_authority);
}

TEST_F(KubeconfigTest, WrongValuesAreErrorsNamingTheKey) {
  struct Case {
    std::string cluster;
    std::string user;
    std::string error;  // after "kubeconfig PATH: "
  } cases[] = {
      {"{server: 'http://k:80'}", "{token: t}",
       "cluster \"k\": server: http://k:80: only https is supported"},
      {"{server: 'https://k', insecure-skip-tls-verify: 'yes'}", "{token: t}",
       "cluster \"k\": insecure-skip-tls-verify: expected true or false"},
      {"{server: 'https://k', certificate-authority-data: 'not*base64'}", "{token: t}",
       "cluster \"k\": certificate-authority-data: not valid base64"},
      {"{certificate-authority: ca.crt}", "{token: t}", "cluster \"k\": server: missing"},
      {"{server: 'https://k'}", "{client-certificate: ca.crt}",
       "user \"u\": client-certificate without client-key"},
      {"{server: 'https://k'}", "{exec: {command: aws}}",
       "user \"u\": exec: not supported; give gpuadmit a token, tokenFile or client certificate"},
      {"{server: 'https://k'}", "{token: [1, 2]}", "user \"u\": token: expected a string"},
  };
  for (const Case& c : cases) {
    std::string path =
        dir_.Write("config", "current-context: c\nclusters:\n- {name: k, cluster: " + c.cluster +
                                 "}\ncontexts:\n- {name: c, context: {cluster: k, "
                                 "user: u}}\nusers:\n- {name: u, user: " +
                                 c.user + "}\n");
    auto config = LoadKubeconfig(path);
    ASSERT_FALSE(config.ok()) << c.error;
    EXPECT_EQ(config.error().message, "kubeconfig " + path + ": " + c.error);
  }
}

TEST_F(KubeconfigTest, YamlSyntaxErrorsCarryLineAndColumn) {
  std::string path = dir_.Write("config", "clusters:\n- name: [unclosed\n");
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message.rfind("kubeconfig " + path + ":3:", 0), 0u)
      << config.error().message;
}

class InClusterTest : public ::testing::Test {
 protected:
  InClusterEnv Env() const { return {"10.96.0.1", "443", dir_.path()}; }
  TempDir dir_;
};

TEST_F(InClusterTest, ReadsTheServiceAccountDirectoryAndNamesTheTokenFile) {
  dir_.Write("ca.crt", kCaPem);
  dir_.Write("token", "eyJhbGciOi.token\n");
  dir_.Write("namespace", "gpuadmit-system");
  auto config = InClusterConfig(Env());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().server, "https://10.96.0.1:443");
  ASSERT_TRUE(config.value().certificate_authority);
  EXPECT_EQ(config.value().certificate_authority->pem, kCaPem);
  EXPECT_EQ(config.value().certificate_authority->origin, dir_.path() + "/ca.crt");
  EXPECT_EQ(config.value().token_file, dir_.path() + "/token");
  EXPECT_EQ(config.value().token, "");
  EXPECT_EQ(config.value().namespace_name, "gpuadmit-system");
}

TEST_F(InClusterTest, Ipv6ServiceHostIsBracketed) {
  dir_.Write("ca.crt", kCaPem);
  dir_.Write("token", "t");
  InClusterEnv env = Env();
  env.service_host = "fd00::1";
  auto config = InClusterConfig(env);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().server, "https://[fd00::1]:443");
  EXPECT_EQ(config.value().namespace_name, "default");  // no namespace file
}

TEST_F(InClusterTest, MissingEnvironmentOrFilesAreErrorsNamingThem) {
  InClusterEnv no_host = Env();
  no_host.service_host = "";
  auto config = InClusterConfig(no_host);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);

  config = InClusterConfig(Env());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "in-cluster: " + dir_.path() + "/ca.crt: No such file or directory");

  dir_.Write("ca.crt", kCaPem);
  config = InClusterConfig(Env());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "in-cluster: " + dir_.path() + "/token: No such file or directory");
}

TEST(InClusterEnv, FromProcessReadsTheServiceVariables) {
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  InClusterEnv env = InClusterEnv::FromProcess();
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  EXPECT_EQ(env.service_host, "10.0.0.1");
  EXPECT_EQ(env.service_port, "6443");
  EXPECT_EQ(env.service_account_dir, "/var/run/secrets/kubernetes.io/serviceaccount");
}

}  // namespace
}  // namespace gpuadmit
