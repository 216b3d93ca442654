#include "webhook/tls/caller_trust.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include "webhook/tls/openssl_error.h"

namespace gpuadmit {
namespace {

// Where Attach leaves the CallerTrust for the verify callback.
int TrustIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

Result<std::vector<X509*>> ReadBundle(const std::string& file) {
  BIO* bio = BIO_new_file(file.c_str(), "r");
  if (bio == nullptr) return Error{file + ": cannot open: " + TakeOpenSslError()};
  std::vector<X509*> certs;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) certs.push_back(cert);
  BIO_free(bio);
  ERR_clear_error();  // the read that ended the loop
  if (certs.empty()) return Error{file + ": not a usable PEM CA bundle: no certificate in it"};
  return certs;
}

bool Anchors(const std::vector<X509*>& roots, X509* anchor) {
  for (X509* root : roots) {
    if (X509_cmp(root, anchor) == 0) return true;
  }
  return false;
}

bool Names(X509* leaf, const std::string& name) {
  return X509_check_host(leaf, name.data(), name.size(), 0, nullptr) == 1;
}

std::string PeerAddress(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) return "unknown";
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      peer.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr);
  if (inet_ntop(peer.ss_family, address, text, sizeof text) == nullptr) return "unknown";
  return text;
}

}  // namespace

CallerTrust::~CallerTrust() {
  for (X509* cert : client_roots_) X509_free(cert);
  for (X509* cert : peer_roots_) X509_free(cert);
}

Result<std::unique_ptr<CallerTrust>> CallerTrust::Load(const CallerTrustOptions& options) {
  std::unique_ptr<CallerTrust> self(new CallerTrust(options));
  if (!options.client_ca_file.empty()) {
    auto roots = ReadBundle(options.client_ca_file);
    if (!roots.ok()) return roots.error();
    self->client_roots_ = std::move(roots).value();
  }
  if (!options.peer_ca_file.empty()) {
    if (options.peer_name.empty()) return Error{"no replica name to verify peers against"};
    auto roots = ReadBundle(options.peer_ca_file);
    if (!roots.ok()) return roots.error();
    self->peer_roots_ = std::move(roots).value();
  }
  return self;
}

bool CallerTrust::Attach(SSL_CTX& ctx, std::string& error) const {
  if (client_roots_.empty() && peer_roots_.empty()) return true;
  X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  for (const std::vector<X509*>* roots : {&client_roots_, &peer_roots_}) {
    for (X509* root : *roots) {
      if (X509_STORE_add_cert(store, root) != 1) ERR_clear_error();  // the same CA in both
      sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(root)));
    }
  }
  // Names the acceptable CAs in the handshake, so a client with several certificates picks.
  SSL_CTX_set_client_CA_list(&ctx, names);
  if (SSL_CTX_set_ex_data(&ctx, TrustIndex(), const_cast<CallerTrust*>(this)) != 1) {
    error = "cannot attach the client CAs: " + TakeOpenSslError();
    return false;
  }
  int mode = SSL_VERIFY_PEER;
  if (!client_roots_.empty()) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(&ctx, mode, &CallerTrust::Verify);
  // A resumed session brings no verified chain to identify the caller by: every connection
  // makes a full handshake (the apiserver keeps its connections alive, so this is rare).
  SSL_CTX_set_session_cache_mode(&ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_TICKET);
  return true;
}

int CallerTrust::Verify(int preverified, X509_STORE_CTX* store) {
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* self =
      static_cast<const CallerTrust*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), TrustIndex()));
  bool required = !self->client_roots_.empty();
  // Without a client CA, a certificate that does not verify makes an unauthenticated caller
  // (Identify sees the failed result), not a failed handshake.
  if (preverified != 1) return required ? 0 : 1;
  if (!required || X509_STORE_CTX_get_error_depth(store) != 0) return 1;
  STACK_OF(X509)* chain = X509_STORE_CTX_get0_chain(store);
  Caller who = self->Classify(X509_STORE_CTX_get_current_cert(store),
                              sk_X509_value(chain, sk_X509_num(chain) - 1));
  if (who.authenticated || who.peer) return 1;
  // The CA signed it for another client: refused like a certificate from another CA.
  X509_STORE_CTX_set_error(store, X509_V_ERR_HOSTNAME_MISMATCH);
  return 0;
}

Caller CallerTrust::Classify(X509* leaf, X509* anchor) const {
  Caller who;
  who.authenticated = Anchors(client_roots_, anchor) &&
                      (options_.client_name.empty() || Names(leaf, options_.client_name));
  who.peer = Anchors(peer_roots_, anchor) && Names(leaf, options_.peer_name);
  return who;
}

Caller CallerTrust::Identify(SSL* ssl, int fd) const {
  Caller who;
  X509* leaf = SSL_get0_peer_certificate(ssl);
  STACK_OF(X509)* chain = SSL_get0_verified_chain(ssl);
  if (leaf != nullptr && chain != nullptr && sk_X509_num(chain) > 0 &&
      SSL_get_verify_result(ssl) == X509_V_OK) {
    who = Classify(leaf, sk_X509_value(chain, sk_X509_num(chain) - 1));
  }
  who.address = PeerAddress(fd);
  who.scope = ReservationScope(who);
  return who;
}

std::string ReservationScope(const Caller& caller) {
  return caller.authenticated ? "" : "address " + caller.address;
}

}  // namespace gpuadmit
