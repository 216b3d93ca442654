// ServingCertificate: the certificate chain and private key gpuadmit presents, loaded from two
// PEM files, checked (the key matches, the certificate is within its validity), and swapped
// whole while serving. OpenSSL's certificate callback hands every new handshake the pair
// current at that moment; a connection keeps the pair it shook hands with, so rotation never
// breaks a connection in flight.
//
//   auto pair = LoadCertifiedKey("tls.crt", "tls.key");      // Error names the file at fault
//   ServingCertificate cert(std::move(pair).value());
//   cert.Attach(ctx);                                        // before the server accepts
//   if (auto error = cert.Reload("tls.crt", "tls.key")) ...  // the old pair stays
//
// Thread safety: Attach before serving; Reload, current and handshakes from any thread.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"

namespace gpuadmit {

// A leaf certificate, the intermediates that followed it in the file, and its key.
class CertifiedKey {
 public:
  CertifiedKey(X509* leaf, STACK_OF(X509) * chain, EVP_PKEY* key);  // takes ownership
  ~CertifiedKey();
  CertifiedKey(const CertifiedKey&) = delete;
  CertifiedKey& operator=(const CertifiedKey&) = delete;

  X509* leaf() const { return leaf_; }
  STACK_OF(X509) * chain() const { return chain_; }
  EVP_PKEY* key() const { return key_; }
  std::string NotAfter() const;  // "Nov 21 14:00:00 2027 GMT"
  int64_t NotAfterUnix() const;  // the same in seconds since the epoch; 0 if unreadable

 private:
  X509* leaf_;
  STACK_OF(X509) * chain_;
  EVP_PKEY* key_;
};

// Reads and checks the pair. Errors are one line naming the file: not PEM, no certificate, the
// key does not match, expired (with notAfter), not valid yet (with notBefore).
Result<std::shared_ptr<const CertifiedKey>> LoadCertifiedKey(const std::string& cert_file,
                                                             const std::string& key_file);

class ServingCertificate {
 public:
  explicit ServingCertificate(std::shared_ptr<const CertifiedKey> initial);

  // Installs the pair on `ctx` (so the context is complete on its own) and the certificate
  // callback that presents the current pair on each handshake. `this` must outlive `ctx`.
  bool Attach(SSL_CTX& ctx);

  // Loads the pair again; a bad one is refused and the current pair stays. The error, if any.
  std::optional<std::string> Reload(const std::string& cert_file, const std::string& key_file);

  std::shared_ptr<const CertifiedKey> current() const { return current_.load(); }

 private:
  static int OnHandshake(SSL* ssl, void* self);

  std::atomic<std::shared_ptr<const CertifiedKey>> current_;
};

}  // namespace gpuadmit
