// The OpenSSL error queue as one line for an error message.
//
//   if (SSL_CTX_use_certificate(...) != 1) return Error{"cannot ...: " + TakeOpenSslError()};
//
// Thread safety: OpenSSL's error queue is per thread; so is this.
#pragma once

#include <string>
#include <string_view>

namespace gpuadmit {

// The oldest queued error as OpenSSL words it, or `if_none` when the queue is empty. Clears the
// queue, so a later call does not report this error again.
std::string TakeOpenSslError(std::string_view if_none = "unknown OpenSSL error");

}  // namespace gpuadmit
