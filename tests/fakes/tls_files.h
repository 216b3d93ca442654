// TlsFiles: a throw-away CA-less self-signed ECDSA P-256 certificate for localhost/127.0.0.1 in a
// temporary directory, made with OpenSSL's API, removed with the object.
//
//   TlsFiles tls;  // tls.cert_file(), tls.key_file()
#pragma once

#include <string>

namespace gpuadmit::testing {

class TlsFiles {
 public:
  // Valid from a minute ago for a day; `valid_from_seconds`/`valid_for_seconds` move the window
  // (relative to now) to make expired or not-yet-valid certificates.
  explicit TlsFiles(long valid_from_seconds = -60, long valid_for_seconds = 24 * 3600);
  ~TlsFiles();
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  const std::string& cert_file() const { return cert_; }
  const std::string& key_file() const { return key_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string cert_;
  std::string key_;
};

}  // namespace gpuadmit::testing
