// The API server's version (GET /version), for features that need a minimum Kubernetes: the
// capacity queue's scheduling gates need 1.30, where Pod scheduling readiness is GA.
//
//   auto version = ReadServerVersion(client);
//   if (version.ok() && !version.value().AtLeast(1, 30)) -> refuse, naming version.value().git
//
// Thread safety: pure functions, and one request on a client the caller owns.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "webhook/kube/kube_client.h"

namespace gpuadmit {

struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string git;  // gitVersion, "v1.30.2-eks-1234"

  bool AtLeast(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};

// Reads a /version body: major and minor as the apiserver writes them (strings, a managed
// cluster's minor may end in "+", "30+"), gitVersion as is. Errors name what is missing.
Result<ServerVersion> ParseServerVersion(std::string_view body);

// GET /version on `client`. Errors: transport failures, a status other than 200, a body that
// ParseServerVersion refuses.
Result<ServerVersion> ReadServerVersion(KubeClient& client);

}  // namespace gpuadmit
