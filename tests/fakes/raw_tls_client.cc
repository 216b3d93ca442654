#include "tests/fakes/raw_tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>

namespace gpuadmit::testing {

int ConnectLoopback(int port, int receive_timeout_seconds) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (receive_timeout_seconds > 0) {
    timeval bound{receive_timeout_seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

RawTlsClient::RawTlsClient(int port, int receive_timeout_seconds) {
  fd_ = ConnectLoopback(port, receive_timeout_seconds);
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (fd_ < 0 || ctx_ == nullptr) return;
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd_);
  if (SSL_connect(ssl) == 1) {
    ssl_ = ssl;
  } else {
    SSL_free(ssl);
  }
}

RawTlsClient::~RawTlsClient() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) close(fd_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

bool RawTlsClient::Send(std::string_view bytes) {
  return ssl_ != nullptr && SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
                                static_cast<int>(bytes.size());
}

std::string RawTlsClient::ReadResponse() {
  if (ssl_ == nullptr) return "";
  while (true) {
    size_t end = buffered_.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      std::string head = buffered_.substr(0, end);
      for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
        if (strncasecmp(head.c_str() + at + 2, "Content-Length:", 15) == 0) {
          length = std::strtoul(head.c_str() + at + 17, nullptr, 10);
        }
      }
      size_t total = end + 4 + length;
      if (buffered_.size() >= total) {
        std::string response = buffered_.substr(0, total);
        buffered_.erase(0, total);
        return response;
      }
    }
    char chunk[16384];
    int n = SSL_read(ssl_, chunk, sizeof chunk);
    if (n <= 0) return "";
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

bool RawTlsClient::Readable(int wait_ms) {
  if (ssl_ == nullptr) return false;
  if (!buffered_.empty() || SSL_has_pending(ssl_) == 1) return true;
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, wait_ms) == 1;
}

bool RawTlsClient::Closed() {
  if (ssl_ == nullptr) return true;
  char byte;
  int n = SSL_read(ssl_, &byte, 1);
  return n <= 0 && SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ;  // WANT_READ: timed out
}

}  // namespace gpuadmit::testing
