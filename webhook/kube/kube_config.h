// KubeConfig: where the Kubernetes API is and how to authenticate to it, read either from a
// kubeconfig file (`--kubeconfig`) or from the pod's service account (in-cluster, the default).
// Files named by the configuration (CA, client certificate and key) are read here, once, so a
// bad path is reported against the kubeconfig key that named it; the bearer token file is only
// named, because bound service-account tokens rotate and KubeClient re-reads it.
//
//   auto config = LoadKubeconfig("/home/me/.kube/config");   // current-context
//   auto config = InClusterConfig(InClusterEnv::FromProcess());
//   if (!config.ok()) ... config.error().message  // "kubeconfig F: context \"x\" not found"
//
// Thread safety: pure functions over their inputs and the files they read; KubeConfig is a value.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// PEM text and where it came from, so that an error about its content names its origin.
struct PemSource {
  std::string pem;
  std::string origin;  // a file path, or "kubeconfig F: user \"u\": client-key-data"
};

struct KubeConfig {
  std::string server;           // "https://host:port", possibly with a path prefix
  std::string tls_server_name;  // verify (and SNI) against this name instead of the URL's host
  bool insecure_skip_tls_verify = false;
  std::optional<PemSource> certificate_authority;  // none: the system's trusted roots
  std::string token;                               // a literal bearer token
  std::string token_file;  // a bearer token file, re-read by the client; wins over `token`
  std::optional<PemSource> client_certificate;
  std::optional<PemSource> client_key;
  std::string namespace_name;  // the context's namespace, or the pod's own in-cluster
};

// The kubeconfig at `path`, resolved through `context` (empty: its current-context) to one
// cluster and one user. Relative file paths are taken from the kubeconfig's directory. Errors
// start with "kubeconfig PATH: " and name the context, cluster or user and the key at fault.
// Not supported (an error says so): exec and auth-provider plugins, basic auth, proxy-url.
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The same over kubeconfig text already read from `path` (which names it in errors and anchors
// relative file paths).
Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                   const std::string& context = "");

// The process environment as InClusterConfig reads it; tests point the directory elsewhere.
struct InClusterEnv {
  std::string service_host;  // $KUBERNETES_SERVICE_HOST
  std::string service_port;  // $KUBERNETES_SERVICE_PORT
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // The two variables from the process environment, the standard directory.
  static InClusterEnv FromProcess();
};

// The pod's own service account: server from the environment, `ca.crt` read now, `token` named
// for re-reading (checked readable now), `namespace` read if present. Errors name the variable
// or the file.
Result<KubeConfig> InClusterConfig(const InClusterEnv& env);

// What the command line asks for: the kubeconfig at `kubeconfig` (with `context`) when given,
// else the in-cluster service account of this process.
Result<KubeConfig> KubeConfigFor(const std::string& kubeconfig, const std::string& context);

}  // namespace gpuadmit
