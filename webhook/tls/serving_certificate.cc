#include "webhook/tls/serving_certificate.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <cstdio>
#include <ctime>

#include "webhook/tls/openssl_error.h"

namespace gpuadmit {
namespace {

std::string Asn1Time(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioCloser>;

}  // namespace

CertifiedKey::CertifiedKey(X509* leaf, STACK_OF(X509) * chain, EVP_PKEY* key)
    : leaf_(leaf), chain_(chain), key_(key) {}

CertifiedKey::~CertifiedKey() {
  X509_free(leaf_);
  sk_X509_pop_free(chain_, X509_free);
  EVP_PKEY_free(key_);
}

std::string CertifiedKey::NotAfter() const { return Asn1Time(X509_get0_notAfter(leaf_)); }

int64_t CertifiedKey::NotAfterUnix() const {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf_), &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

Result<std::shared_ptr<const CertifiedKey>> LoadCertifiedKey(const std::string& cert_file,
                                                             const std::string& key_file) {
  ERR_clear_error();
  BioPtr cert_bio(BIO_new_file(cert_file.c_str(), "r"));
  if (!cert_bio) {
    return Error{cert_file + ": not a usable PEM certificate: cannot open: " +
                 TakeOpenSslError("no PEM data found")};
  }
  X509* leaf = PEM_read_bio_X509_AUX(cert_bio.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) {
    return Error{cert_file +
                 ": not a usable PEM certificate: " + TakeOpenSslError("no PEM data found")};
  }
  STACK_OF(X509)* chain = sk_X509_new_null();
  while (X509* intermediate = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(chain, intermediate);
  }
  ERR_clear_error();  // the loop ends on "no start line": the end of the file

  BioPtr key_bio(BIO_new_file(key_file.c_str(), "r"));
  EVP_PKEY* key =
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  // Owned from here on: every early return below frees the three.
  auto pair = std::make_shared<const CertifiedKey>(leaf, chain, key);
  if (key == nullptr) {
    return Error{key_file +
                 ": not a usable PEM private key: " + TakeOpenSslError("no PEM data found")};
  }
  if (X509_check_private_key(leaf, key) != 1) {
    ERR_clear_error();
    return Error{key_file + ": does not match the certificate in " + cert_file};
  }
  // A certificate outside its validity is refused: every handshake would fail, and the
  // apiserver would report only a TLS error, far from the cause.
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    return Error{cert_file + ": certificate expired (notAfter " +
                 Asn1Time(X509_get0_notAfter(leaf)) + ")"};
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
    return Error{cert_file + ": certificate not valid yet (notBefore " +
                 Asn1Time(X509_get0_notBefore(leaf)) + ")"};
  }
  return std::shared_ptr<const CertifiedKey>(std::move(pair));
}

ServingCertificate::ServingCertificate(std::shared_ptr<const CertifiedKey> initial)
    : current_(std::move(initial)) {}

bool ServingCertificate::Attach(SSL_CTX& ctx) {
  std::shared_ptr<const CertifiedKey> pair = current();
  if (SSL_CTX_use_certificate(&ctx, pair->leaf()) != 1 ||
      SSL_CTX_use_PrivateKey(&ctx, pair->key()) != 1 ||
      SSL_CTX_set1_chain(&ctx, pair->chain()) != 1) {
    return false;
  }
  SSL_CTX_set_cert_cb(&ctx, &ServingCertificate::OnHandshake, this);
  return true;
}

int ServingCertificate::OnHandshake(SSL* ssl, void* self) {
  std::shared_ptr<const CertifiedKey> pair = static_cast<ServingCertificate*>(self)->current();
  // The SSL takes its own references: the pair may be swapped out and freed mid-handshake.
  if (SSL_use_certificate(ssl, pair->leaf()) != 1 || SSL_use_PrivateKey(ssl, pair->key()) != 1 ||
      SSL_set1_chain(ssl, pair->chain()) != 1) {
    return 0;
  }
  return 1;
}

std::optional<std::string> ServingCertificate::Reload(const std::string& cert_file,
                                                      const std::string& key_file) {
  auto pair = LoadCertifiedKey(cert_file, key_file);
  if (!pair.ok()) return pair.error().message;
  current_.store(std::move(pair).value());
  return std::nullopt;
}

}  // namespace gpuadmit
