// TlsConnection: one accepted TLS connection, driven by readiness events from an epoll loop.
// Non-blocking OpenSSL underneath; HTTP/1.1 keep-alive on top: it reads whole requests (head,
// then Content-Length bytes of body), asks its host to serve each one, and writes each answer
// as a single buffer (one TLS record when it fits). It owns the socket and closes it.
//
//   TlsConnection c(fd, ssl, host, now, /*over_capacity=*/false);
//   Want w = c.OnReady(now);   // after epoll said the socket is ready; wait for `w` next
//   if (w == Want::kFlush) w = c.Flush(now);  // answers are ready: write them (the loop does
//                                             // so after the rest of its batch is served)
//   if (!c.OnTick(now, limits)) close it;  // every sweep: timeouts
//   c.OnStop(now);                          // the server stops: each answer closes
//
// Thread safety: none; a connection lives on one worker thread.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <string>
#include <string_view>

#include "webhook/server/http_request.h"
#include "webhook/tls/caller_trust.h"

namespace gpuadmit {

struct HttpResponse {
  int status = 200;
  std::string_view content_type = "text/plain";
  std::string body;
  std::string_view extra_headers;  // "Name: value\r\n" lines
  bool close = false;              // answer with Connection: close and close after writing
};

// What a connection needs from the server that accepted it.
class ConnectionHost {
 public:
  // Who the client is, once its handshake is done (its certificate, its address).
  virtual Caller Identify(SSL* ssl, int fd) = 0;
  // Answers one complete request from `caller`. `over_capacity`: accepted beyond the connection
  // cap. A head whose Content-Length is over kMaxReviewBody comes with an empty body (it is not
  // read): the answer should be 413; the connection closes after it.
  virtual HttpResponse Serve(const RequestHead& head, std::string_view body, bool over_capacity,
                             const Caller& caller) = 0;
  // The connection started (true) or finished (false) a request: bytes of it have arrived, or
  // its answer is not fully written yet. Drain counts busy connections.
  virtual void BusyChanged(bool busy) = 0;

  virtual ~ConnectionHost() = default;
};

struct ConnectionLimits {
  std::chrono::steady_clock::duration idle;   // kept alive with nothing in progress
  std::chrono::steady_clock::duration read;   // handshake, or a request from its first byte
  std::chrono::steady_clock::duration write;  // without progress while an answer is pending
  // After Stop, how long an idle connection still takes one more request. A client that sent
  // one just as the server stopped gets its answer (with Connection: close), not a reset.
  std::chrono::steady_clock::duration linger;
};

class TlsConnection {
 public:
  using Clock = std::chrono::steady_clock;
  // kFlush: answers wait to be written; call Flush, then wait for what it returns.
  enum class Want { kRead, kWrite, kClose, kFlush };

  // Takes ownership of `fd` and `ssl` (already SSL_set_fd'd, in accept state).
  TlsConnection(int fd, SSL* ssl, ConnectionHost& host, Clock::time_point now, bool over_capacity);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  int fd() const { return fd_; }

  // The socket is readable or writable: handshake, write what is pending, read, serve. Returns
  // kFlush when it served requests whose answers are not written yet.
  Want OnReady(Clock::time_point now);
  // Writes the answers OnReady left (as far as the socket takes them).
  Want Flush(Clock::time_point now);
  // Whether to keep the connection. A request slower than limits.read is answered 408 and
  // closed; an idle connection past limits.idle, or a stalled write past limits.write, closes.
  bool OnTick(Clock::time_point now, const ConnectionLimits& limits);
  // The server stops: the next answer says Connection: close and the connection closes after
  // it; an idle connection that gets no request within limits.linger closes then (OnTick).
  void OnStop(Clock::time_point now);

 private:
  bool Handshake(Clock::time_point now, Want& want);
  bool Read(Clock::time_point now);  // false: the connection failed
  bool HasWholeRequest();            // in_ holds a whole request, or a head to refuse
  void ServeComplete(Clock::time_point now);
  void Respond(HttpResponse r);
  bool Write(Clock::time_point now);  // false: the connection failed
  void UpdateBusy();
  Want Next(Clock::time_point now);
  // Closing while the client still sends makes the kernel answer with a reset, which can destroy
  // the last answer before the client reads it. So a connection we close first sends
  // close_notify and FIN, then drops what still arrives until the client closes too (or a
  // couple of seconds pass).
  Want Linger(Clock::time_point now);
  Want DropUntilEof();

  int fd_;
  SSL* ssl_;
  ConnectionHost& host_;
  bool over_capacity_;
  Caller caller_;  // set when the handshake is done
  bool handshake_done_ = false;
  bool stopping_ = false;
  bool eof_ = false;                // the peer sent close_notify or FIN
  bool close_after_write_ = false;  // the last answer said Connection: close
  bool write_blocks_read_ = false;  // SSL_read asked for a writable socket
  bool sent_continue_ = false;      // "100 Continue" sent for the request being read
  bool busy_ = false;
  bool lingering_ = false;   // our side is closed; waiting for the client's
  size_t discard_left_ = 0;  // body bytes of a refused (413) request still to drop
  std::string in_;           // received plaintext; in_[in_used_..] is not consumed yet
  size_t in_used_ = 0;
  std::string out_;  // answers not written yet; out_[out_sent_..] is pending
  size_t out_sent_ = 0;
  Clock::time_point accepted_;
  Clock::time_point request_started_;  // first byte of the request being read
  Clock::time_point last_progress_;    // last byte read or written
  Clock::time_point stopped_;          // when OnStop came
  Clock::time_point linger_since_;
};

}  // namespace gpuadmit
