// CallerTrust: who is on the other end of a TLS connection, from the client certificate it
// presented. Two kinds of client are recognised:
//   - the apiserver: a certificate the --client-ca bundle signed (naming --client-name when one
//     is set). With a client CA configured, every client must be one of these or a peer, and any
//     other is refused at the handshake.
//   - a peer replica: a certificate the --peer-ca bundle signed for the replicas' own name (the
//     name their serving certificate holds). Only a peer's review is taken as forwarded.
// Any other client (no certificate, or one neither bundle vouches for) is served as an
// unauthenticated caller when no client CA is required.
//
//   auto trust = CallerTrust::Load({.client_ca_file = "ca.crt", .peer_ca_file = "peer-ca.crt",
//                                   .peer_name = "gpuadmit.gpuadmit.svc"});
//   trust.value()->Attach(ctx);                 // before the server accepts
//   Caller who = trust.value()->Identify(ssl, fd);  // after the handshake
//
// Thread safety: Load and Attach before serving; Identify and handshakes from any thread.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpuadmit {

struct Caller {
  std::string address;         // the client's IP address, as its socket shows it
  bool authenticated = false;  // its certificate is the apiserver's (client CA, client name)
  bool peer = false;           // its certificate is another replica's (peer CA, peer name)
  std::string scope;           // its reservation scope, ReservationScope(*this), set by Identify
};

// The scope whose reservations a caller's decisions see and add to. Every caller the apiserver's
// client certificate authenticated shares one, ""; any other caller has its own, "address X", so
// reviews sent from elsewhere never hold devices a real pod's decision would count.
std::string ReservationScope(const Caller& caller);

struct CallerTrustOptions {
  std::string client_ca_file;  // empty: clients need no certificate
  std::string client_name;     // with client_ca_file: the name the certificate must hold
  std::string peer_ca_file;    // empty: no client is a peer
  std::string peer_name;       // with peer_ca_file: the replicas' name
};

class CallerTrust {
 public:
  // Reads the bundles. Errors name the file that is not a usable PEM bundle.
  static Result<std::unique_ptr<CallerTrust>> Load(const CallerTrustOptions& options);
  ~CallerTrust();
  CallerTrust(const CallerTrust&) = delete;
  CallerTrust& operator=(const CallerTrust&) = delete;

  // Makes `ctx` ask for client certificates (require them, with a client CA) and verify them
  // against both bundles. `ctx` must not outlive this.
  bool Attach(SSL_CTX& ctx, std::string& error) const;
  // The caller on a connection whose handshake is done, its scope included: once a connection,
  // not once a request.
  Caller Identify(SSL* ssl, int fd) const;

 private:
  explicit CallerTrust(CallerTrustOptions options) : options_(std::move(options)) {}
  // What the certificate `leaf`, verified up to `anchor`, makes its holder.
  Caller Classify(X509* leaf, X509* anchor) const;
  static int Verify(int preverified, X509_STORE_CTX* store);

  CallerTrustOptions options_;
  std::vector<X509*> client_roots_;  // owned
  std::vector<X509*> peer_roots_;    // owned
};

}  // namespace gpuadmit
