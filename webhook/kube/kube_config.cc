#include "webhook/kube/kube_config.h"

#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json/yaml_json.h"
#include "webhook/os/read_file.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string TrimSpace(const std::string& s) {
  const char* kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(kSpace) + 1 - begin);
}

// RFC 4648 base64 as kubectl writes *-data fields; line breaks and spaces are skipped.
Result<std::string> DecodeBase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  int padding = 0;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0 || padding > 0) return Error{"not valid base64"};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // Six bits left over means one character in the last group of four: a truncated value.
  if (bits == 6 || padding > 2) return Error{"not valid base64"};
  return out;
}

// The `inner` map of the entry named `name` in the list `doc[list]`, e.g. the "cluster" map of
// clusters[] with name "kind". Null when there is no such entry.
const json* FindNamed(const json& doc, const char* list, const char* inner,
                      const std::string& name) {
  auto it = doc.find(list);
  if (it == doc.end() || !it->is_array()) return nullptr;
  for (const json& entry : *it) {
    if (!entry.is_object() || entry.value("name", json()) != name) continue;
    auto found = entry.find(inner);
    static const json kEmpty = json::object();
    return found != entry.end() && found->is_object() ? &*found : &kEmpty;
  }
  return nullptr;
}

// Reads one section (a cluster, a user, a context) with errors that name it.
class Section {
 public:
  Section(const json& map, std::string where, std::string dir)
      : map_(map), where_(std::move(where)), dir_(std::move(dir)) {}

  const std::string& where() const { return where_; }
  bool Has(const char* key) const { return map_.contains(key); }

  // A string value; empty when absent; an error when present but not a string.
  Result<std::string> String(const char* key) const {
    auto it = map_.find(key);
    if (it == map_.end() || it->is_null()) return std::string();
    if (!it->is_string()) return Error{where_ + ": " + key + ": expected a string"};
    return it->get<std::string>();
  }

  Result<bool> Bool(const char* key) const {
    auto it = map_.find(key);
    if (it == map_.end() || it->is_null()) return false;
    if (!it->is_boolean()) return Error{where_ + ": " + key + ": expected true or false"};
    return it->get<bool>();
  }

  // A path, relative ones taken from the kubeconfig's directory as kubectl does.
  Result<std::string> Path(const char* key) const {
    auto path = String(key);
    if (!path.ok() || path.value().empty() || path.value().front() == '/' || dir_.empty()) {
      return path;
    }
    return dir_ + "/" + path.value();
  }

  // PEM from `data_key` (base64, wins as in kubectl) or the file named by `file_key`.
  Result<std::optional<PemSource>> Pem(const char* data_key, const char* file_key) const {
    auto data = String(data_key);
    if (!data.ok()) return data.error();
    if (!data.value().empty()) {
      auto pem = DecodeBase64(data.value());
      if (!pem.ok()) return Error{where_ + ": " + data_key + ": " + pem.error().message};
      return std::optional<PemSource>(PemSource{pem.value(), where_ + ": " + data_key});
    }
    auto path = Path(file_key);
    if (!path.ok()) return path.error();
    if (path.value().empty()) return std::optional<PemSource>();
    auto pem = ReadWholeFile(path.value());
    if (!pem.ok()) return Error{where_ + ": " + file_key + ": " + pem.error().message};
    return std::optional<PemSource>(PemSource{pem.value(), path.value()});
  }

 private:
  const json& map_;
  std::string where_;
  std::string dir_;
};

// Fills the cluster fields of `config`; the error, if any.
std::optional<Error> ReadCluster(const Section& cluster, KubeConfig& config) {
  auto server = cluster.String("server");
  if (!server.ok()) return server.error();
  if (server.value().empty()) return Error{cluster.where() + ": server: missing"};
  config.server = server.value();
  // kubectl takes a server without a scheme as https.
  if (config.server.find("://") == std::string::npos) config.server = "https://" + config.server;
  if (config.server.rfind("https://", 0) != 0) {
    return Error{cluster.where() + ": server: " + config.server + ": only https is supported"};
  }
  auto name = cluster.String("tls-server-name");
  auto insecure = cluster.Bool("insecure-skip-tls-verify");
  auto ca = cluster.Pem("certificate-authority-data", "certificate-authority");
  if (!name.ok()) return name.error();
  if (!insecure.ok()) return insecure.error();
  if (!ca.ok()) return ca.error();
  if (cluster.Has("proxy-url")) return Error{cluster.where() + ": proxy-url: not supported"};
  config.tls_server_name = name.value();
  config.insecure_skip_tls_verify = insecure.value();
  config.certificate_authority = ca.value();
  return std::nullopt;
}

// Fills the credential fields of `config`; the error, if any.
std::optional<Error> ReadUser(const Section& user, KubeConfig& config) {
  auto token = user.String("token");
  auto token_file = user.Path("tokenFile");
  auto cert = user.Pem("client-certificate-data", "client-certificate");
  auto key = user.Pem("client-key-data", "client-key");
  if (!token.ok()) return token.error();
  if (!token_file.ok()) return token_file.error();
  if (!cert.ok()) return cert.error();
  if (!key.ok()) return key.error();
  if (cert.value().has_value() != key.value().has_value()) {
    return Error{user.where() + ": " +
                 (cert.value() ? "client-certificate without client-key"
                               : "client-key without client-certificate")};
  }
  config.token = TrimSpace(token.value());
  config.token_file = token_file.value();
  config.client_certificate = cert.value();
  config.client_key = key.value();
  bool has_credentials = !config.token.empty() || !config.token_file.empty() || cert.value();
  for (const char* plugin : {"exec", "auth-provider", "username"}) {
    if (user.Has(plugin) && !has_credentials) {
      return Error{user.where() + ": " + plugin +
                   ": not supported; give gpuadmit a token, tokenFile or client certificate"};
    }
  }
  return std::nullopt;
}

}  // namespace

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Error{"kubeconfig " + text.error().message};
  return ParseKubeconfig(text.value(), path, context);
}

Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                   const std::string& context) {
  const std::string where = "kubeconfig " + path;
  auto parsed = YamlToJson(text);
  if (!parsed.ok()) return Error{where + ":" + parsed.error().message};
  const json& doc = parsed.value();
  if (!doc.is_object()) return Error{where + ": not a kubeconfig (expected a map at the top)"};

  std::string context_name = context;
  if (context_name.empty()) {
    auto current = Section(doc, where, "").String("current-context");
    if (!current.ok()) return current.error();
    if (current.value().empty()) return Error{where + ": current-context: not set"};
    context_name = current.value();
  }
  const json* context_map = FindNamed(doc, "contexts", "context", context_name);
  if (context_map == nullptr)
    return Error{where + ": context " + Quoted(context_name) + " not found"};
  Section ctx(*context_map, where + ": context " + Quoted(context_name), "");
  auto cluster_name = ctx.String("cluster");
  auto user_name = ctx.String("user");
  auto namespace_name = ctx.String("namespace");
  if (!cluster_name.ok()) return cluster_name.error();
  if (!user_name.ok()) return user_name.error();
  if (!namespace_name.ok()) return namespace_name.error();

  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  KubeConfig config;
  config.namespace_name = namespace_name.value().empty() ? "default" : namespace_name.value();
  const json* cluster = FindNamed(doc, "clusters", "cluster", cluster_name.value());
  if (cluster == nullptr) {
    return Error{ctx.where() + ": cluster " + Quoted(cluster_name.value()) + " not found"};
  }
  Section cluster_section(*cluster, where + ": cluster " + Quoted(cluster_name.value()), dir);
  if (auto error = ReadCluster(cluster_section, config)) return *error;
  // A context without a user is anonymous access, as in kubectl.
  if (!user_name.value().empty()) {
    const json* user = FindNamed(doc, "users", "user", user_name.value());
    if (user == nullptr) {
      return Error{ctx.where() + ": user " + Quoted(user_name.value()) + " not found"};
    }
    Section user_section(*user, where + ": user " + Quoted(user_name.value()), dir);
    if (auto error = ReadUser(user_section, config)) return *error;
  }
  return config;
}

InClusterEnv InClusterEnv::FromProcess() {
  InClusterEnv env;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  env.service_host = host != nullptr ? host : "";
  env.service_port = port != nullptr ? port : "";
  return env;
}

Result<KubeConfig> InClusterConfig(const InClusterEnv& env) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return Error{
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a "
        "pod? give --kubeconfig)"};
  }
  KubeConfig config;
  bool ipv6 = env.service_host.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + env.service_host + "]" : env.service_host) + ":" +
                  env.service_port;
  const std::string ca_file = env.service_account_dir + "/ca.crt";
  auto ca = ReadWholeFile(ca_file);
  if (!ca.ok()) return Error{"in-cluster: " + ca.error().message};
  config.certificate_authority = PemSource{ca.value(), ca_file};
  config.token_file = env.service_account_dir + "/token";
  auto token = ReadWholeFile(config.token_file);
  if (!token.ok()) return Error{"in-cluster: " + token.error().message};
  if (TrimSpace(token.value()).empty())
    return Error{"in-cluster: " + config.token_file + ": empty"};
  // The namespace file is mounted with the token; a missing one is no reason to fail.
  auto namespace_name = ReadWholeFile(env.service_account_dir + "/namespace");
  config.namespace_name = namespace_name.ok() ? TrimSpace(namespace_name.value()) : "default";
  return config;
}

Result<KubeConfig> KubeConfigFor(const std::string& kubeconfig, const std::string& context) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig, context);
  return InClusterConfig(InClusterEnv::FromProcess());
}

}  // namespace gpuadmit
