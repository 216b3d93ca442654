// ReviewForwarder: sends a review to the leader replica and brings back its answer, for
// `serve --leader-elect`. POST /mutate over TLS, verified against the CA that signed
// the replicas' serving certificate and the certificate's own name (the replicas are reached by
// pod IP, which no certificate names), on kept-alive connections pooled per leader address, with
// a deadline well inside the webhook's timeout. The replica presents its own serving certificate
// as its client certificate, which makes it a peer to the leader, and marks the request with
// Gpuadmit-Forwarded (the caller's reservation scope), so the replica receiving it decides it,
// leader or not, in that scope.
//
//   auto forwarder = ReviewForwarder::Create({"/etc/gpuadmit/tls/ca.crt", "gpuadmit.gpuadmit.svc",
//                                             "tls.crt", "tls.key"});
//   auto answer = forwarder.value()->Forward("10.0.0.7:8443", body, "");  // the leader's 200 body
//
// Thread safety: Forward may be called from any thread (each call takes its own connection).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace httplib {
class SSLClient;
}

namespace gpuadmit {

struct ForwarderOptions {
  std::string ca_file;      // PEM: the CA of the replicas' serving certificate
  std::string server_name;  // the name their certificate holds (checked instead of the IP)
  // This replica's serving pair, presented as its client certificate. Each new connection reads
  // the files, so a rotated pair is used from then on.
  std::string client_cert_file;
  std::string client_key_file;
  // 2 s: the webhook's timeoutSeconds is 5; a late leader leaves time to decide locally.
  std::chrono::milliseconds timeout{2000};
  size_t max_idle_per_address = 32;
};

class ReviewForwarder {
 public:
  static Result<std::unique_ptr<ReviewForwarder>> Create(ForwarderOptions options);
  ~ReviewForwarder();
  ReviewForwarder(const ReviewForwarder&) = delete;
  ReviewForwarder& operator=(const ReviewForwarder&) = delete;

  // The leader's answer body when it answered 200; Error with the reason otherwise (cannot
  // connect, TLS refused, timeout, another status). `scope`: the caller's reservation scope.
  Result<std::string> Forward(const std::string& address, std::string_view body,
                              std::string_view scope);

 private:
  explicit ReviewForwarder(ForwarderOptions options);
  std::unique_ptr<httplib::SSLClient> Take(const std::string& address, std::string& error);
  void Give(const std::string& address, std::unique_ptr<httplib::SSLClient> client);

  ForwarderOptions options_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<httplib::SSLClient>>> idle_;
};

// The first DNS name of the certificate in `cert_file` (its subjectAltName), or its CN.
Result<std::string> CertificateDnsName(const std::string& cert_file);

}  // namespace gpuadmit
