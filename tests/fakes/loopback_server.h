// Options for a TlsServer under test: 127.0.0.1, any free port, presenting `tls`.
//
//   ServerOptions options = testing::LoopbackOptions(tls);
//   options.read_timeout_seconds = 1;  // what the test is about
#pragma once

#include "tests/fakes/tls_files.h"
#include "webhook/server/tls_server.h"

namespace gpuadmit::testing {

inline ServerOptions LoopbackOptions(const TlsFiles& tls) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.cert_file = tls.cert_file();
  options.key_file = tls.key_file();
  return options;
}

}  // namespace gpuadmit::testing
