// RawTlsClient: a blocking TLS client on 127.0.0.1 that sends exactly the bytes a test gives it,
// for the HTTP framing cases an HTTP library would never produce (trickled bytes, pipelining,
// Expect: 100-continue, half-sent requests). Certificates are not verified.
//
//   RawTlsClient c(port);          // c.ok() once the handshake is done
//   c.Send("GET /healthz HTTP/1.1\r\n\r\n");
//   std::string answer = c.ReadResponse();  // one whole response, "" on EOF or timeout
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <string_view>

namespace gpuadmit::testing {

// A TCP connection to 127.0.0.1:port, or -1. `receive_timeout_seconds` bounds each read.
int ConnectLoopback(int port, int receive_timeout_seconds = 0);

class RawTlsClient {
 public:
  // Reads wait at most `receive_timeout_seconds` each.
  explicit RawTlsClient(int port, int receive_timeout_seconds = 10);
  ~RawTlsClient();
  RawTlsClient(const RawTlsClient&) = delete;
  RawTlsClient& operator=(const RawTlsClient&) = delete;

  bool ok() const { return ssl_ != nullptr; }
  bool Send(std::string_view bytes);
  // One response: its head and Content-Length bytes of body. "" when the connection ends or a
  // read times out first.
  std::string ReadResponse();
  // True when the server has closed the connection (EOF or close_notify), waiting for it.
  bool Closed();
  // Whether bytes from the server are waiting to be read, after at most `wait_ms`.
  bool Readable(int wait_ms);

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string buffered_;  // received beyond the last response
};

}  // namespace gpuadmit::testing
