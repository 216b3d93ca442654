// The API server's address as a kubeconfig names it (https://host[:port][/path]), and what
// connecting to it needs: whether a host is a literal IP address, and one name resolution (for
// connecting to the URL's host while TLS verifies tls-server-name).
//
//   auto url = ParseServerUrl("https://[::1]:6443/k8s/clusters/c-1");
//   // {host "::1", port 6443, path_prefix "/k8s/clusters/c-1"}
//
// Thread safety: pure functions (ResolveOnce asks the system's resolver).
#pragma once

#include <string>

#include "core/result.h"

namespace gpuadmit {

// A server URL taken apart.
struct ServerUrl {
  std::string host;  // without IPv6 brackets
  int port = 443;
  std::string path_prefix;  // "" or "/a/b", no trailing slash
};

// The parts of an https:// URL; errors on another scheme, a bad port, or a host with characters
// no host has.
Result<ServerUrl> ParseServerUrl(const std::string& url);

// Whether `host` is a literal IPv4 or IPv6 address (without brackets).
bool IsIpAddress(const std::string& host);

// The numeric address of `host` (itself when it is one already); errors name the host.
Result<std::string> ResolveOnce(const std::string& host);

}  // namespace gpuadmit
