// ClusterTls: how KubeClient verifies the API server and presents its client certificate, with
// OpenSSL itself instead of httplib's checks: httplib adds the system's roots to any CA store it
// is given and checks the name against the URL's host, where Kubernetes trusts the cluster CA
// alone and checks tls-server-name when one is set. The verify callback keeps OpenSSL's reason,
// so a failed handshake says why.
//
//   auto tls = ClusterTls::Configure(*http.ssl_context(), config, tls_server_name);
//   tls.value()->ClearVerifyError();  ... the request ...
//   std::string why = tls.value()->VerifyFailure();  // "" when verification did not fail
//
// Thread safety: Configure once; ClearVerifyError and VerifyFailure on the requesting thread,
// around a request (the verify callback runs on that thread, during its handshake).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "core/result.h"
#include "webhook/kube/kube_config.h"

namespace gpuadmit {

class ClusterTls {
 public:
  // Sets up `ctx` (owned by the HTTP client) for `config`: TLS 1.2 or later, the client
  // certificate and key when configured (an error names the file at fault), and verification of
  // the server against the configured CA, or the system's roots without one, under
  // `verify_name` (a host name or an IP address); none with insecure-skip-tls-verify. The
  // ClusterTls must outlive `ctx`'s handshakes.
  static Result<std::unique_ptr<ClusterTls>> Configure(SSL_CTX& ctx, const KubeConfig& config,
                                                       const std::string& verify_name);

  void ClearVerifyError() { verify_error_.clear(); }
  // Why the last handshake's verification failed, naming the CA used; empty if it did not.
  std::string VerifyFailure() const;

 private:
  // SSL_CTX_get_app_data's slot: httplib does not use it.
  static constexpr int kSelfIndex = 0;

  ClusterTls() = default;

  static int OnVerify(int preverified, X509_STORE_CTX* store);

  std::string verify_error_;  // written by OnVerify on the requesting thread, read after
  std::string ca_origin_;
};

}  // namespace gpuadmit
