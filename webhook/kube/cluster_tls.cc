#include "webhook/kube/cluster_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <vector>

#include "webhook/kube/server_url.h"
#include "webhook/tls/openssl_error.h"

namespace gpuadmit {
namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr MemoryBio(const std::string& data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())), BIO_free);
}

// Every certificate in `source`, leaf first.
Result<std::vector<X509Ptr>> ReadCertificates(const PemSource& source) {
  BioPtr bio = MemoryBio(source.pem);
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert, X509_free);
  }
  ERR_clear_error();  // the read that ended the loop left "no start line"
  if (certs.empty()) return Error{source.origin + ": no PEM certificate in it"};
  return certs;
}

Result<PkeyPtr> ReadPrivateKey(const PemSource& source) {
  BioPtr bio = MemoryBio(source.pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) return Error{source.origin + ": not a PEM private key: " + TakeOpenSslError()};
  return key;
}

}  // namespace

Result<std::unique_ptr<ClusterTls>> ClusterTls::Configure(SSL_CTX& ctx, const KubeConfig& config,
                                                          const std::string& verify_name) {
  std::unique_ptr<ClusterTls> tls(new ClusterTls());
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  if (config.client_certificate && config.client_key) {
    auto chain = ReadCertificates(*config.client_certificate);
    if (!chain.ok()) return chain.error();
    auto key = ReadPrivateKey(*config.client_key);
    if (!key.ok()) return key.error();
    bool ok = SSL_CTX_use_certificate(&ctx, chain.value()[0].get()) == 1;
    for (size_t i = 1; ok && i < chain.value().size(); ++i) {
      ok = SSL_CTX_add1_chain_cert(&ctx, chain.value()[i].get()) == 1;
    }
    if (!ok) return Error{config.client_certificate->origin + ": " + TakeOpenSslError()};
    if (SSL_CTX_use_PrivateKey(&ctx, key.value().get()) != 1 ||
        SSL_CTX_check_private_key(&ctx) != 1) {
      ERR_clear_error();
      return Error{config.client_key->origin + ": does not match the certificate in " +
                   config.client_certificate->origin};
    }
  }
  if (config.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_NONE, nullptr);
    return tls;
  }
  X509_STORE* store = X509_STORE_new();
  SSL_CTX_set_cert_store(&ctx, store);  // the context owns it from here
  if (config.certificate_authority) {
    tls->ca_origin_ = config.certificate_authority->origin;
    auto certs = ReadCertificates(*config.certificate_authority);
    if (!certs.ok()) return certs.error();
    for (const X509Ptr& cert : certs.value()) X509_STORE_add_cert(store, cert.get());
  } else {
    tls->ca_origin_ = "the system's trusted roots";
    X509_STORE_set_default_paths(store);
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(&ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  bool named = IsIpAddress(verify_name)
                   ? X509_VERIFY_PARAM_set1_ip_asc(param, verify_name.c_str()) == 1
                   : X509_VERIFY_PARAM_set1_host(param, verify_name.c_str(), 0) == 1;
  if (!named) {
    return Error{"cannot verify against the name " + verify_name + ": " + TakeOpenSslError()};
  }
  SSL_CTX_set_ex_data(&ctx, kSelfIndex, tls.get());
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, &ClusterTls::OnVerify);
  return tls;
}

std::string ClusterTls::VerifyFailure() const {
  if (verify_error_.empty()) return "";
  return "server certificate not trusted: " + verify_error_ + " (verified against " + ca_origin_ +
         ")";
}

int ClusterTls::OnVerify(int preverified, X509_STORE_CTX* store) {
  if (preverified == 1) return 1;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* self = static_cast<ClusterTls*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), kSelfIndex));
  if (self != nullptr && self->verify_error_.empty()) {
    self->verify_error_ = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
    if (X509* cert = X509_STORE_CTX_get_current_cert(store)) {
      char subject[256];
      X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
      self->verify_error_ += std::string(" for ") + subject;
    }
  }
  return 0;
}

}  // namespace gpuadmit
