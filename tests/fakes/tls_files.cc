#include "tests/fakes/tls_files.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace gpuadmit::testing {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("TlsFiles: ") + what);
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

}  // namespace

TlsFiles::TlsFiles(long valid_from_seconds, long valid_for_seconds) {
  char tmpl[] = "/tmp/gpuadmit-tls-XXXXXX";
  Check(mkdtemp(tmpl) != nullptr, "mkdtemp");
  dir_ = tmpl;
  cert_ = dir_ + "/tls.crt";
  key_ = dir_ + "/tls.key";

  EVP_PKEY* key = EVP_EC_gen("P-256");
  Check(key != nullptr, "key");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), valid_from_seconds);
  X509_gmtime_adj(X509_getm_notAfter(cert), valid_from_seconds + valid_for_seconds);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  // Key identifiers keep two pairs apart in one trust store, where their names are the same.
  AddExtension(cert, NID_subject_key_identifier, "hash");
  AddExtension(cert, NID_authority_key_identifier, "keyid:always");
  Check(X509_sign(cert, key, EVP_sha256()) > 0, "sign");

  FILE* f = std::fopen(cert_.c_str(), "w");
  Check(f != nullptr && PEM_write_X509(f, cert) == 1, "write cert");
  std::fclose(f);
  f = std::fopen(key_.c_str(), "w");
  Check(f != nullptr && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "write key");
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
}

TlsFiles::~TlsFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace gpuadmit::testing
