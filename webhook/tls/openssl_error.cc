#include "webhook/tls/openssl_error.h"

#include <openssl/err.h>

namespace gpuadmit {

std::string TakeOpenSslError(std::string_view if_none) {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return std::string(if_none);
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

}  // namespace gpuadmit
