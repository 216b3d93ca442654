#include "webhook/server/tls_connection.h"

#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>

#include "webhook/admission/admission_handler.h"

namespace gpuadmit {
namespace {

// 1 MiB per readiness event: a 7 MiB body does not keep the worker from its other connections
// (epoll is level-triggered: the rest is read on the next turn).
constexpr size_t kReadBudget = 1 << 20;
// Buffers above this are released once emptied, so an idle connection does not keep the
// memory of the largest request it ever carried.
constexpr size_t kKeepCapacity = 256 * 1024;

constexpr std::string_view kJson = "application/json";

// After the last answer on a connection we close, how long to wait for the client to close its
// side before closing ours regardless.
constexpr auto kLingerOnClose = std::chrono::seconds(2);

std::string ErrorBody(std::string_view reason) {
  std::string body = R"({"error":")";
  body += reason;  // our own fixed phrases: nothing to escape
  body += "\"}";
  return body;
}

// SSL_get_error reads the thread's error queue, which must be empty before each call it judges.
// It nearly always is already (each failure below empties it), and ERR_clear_error walks and
// frees all 16 of its slots, about 2k instructions: look first.
void ClearErrorQueue() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

void ReleaseIfLarge(std::string& s) {
  if (s.capacity() > kKeepCapacity) std::string().swap(s);
}

}  // namespace

TlsConnection::TlsConnection(int fd, SSL* ssl, ConnectionHost& host, Clock::time_point now,
                             bool over_capacity)
    : fd_(fd),
      ssl_(ssl),
      host_(host),
      over_capacity_(over_capacity),
      accepted_(now),
      request_started_(now),
      last_progress_(now) {}

TlsConnection::~TlsConnection() {
  if (busy_) host_.BusyChanged(false);
  SSL_free(ssl_);
  close(fd_);
}

TlsConnection::Want TlsConnection::OnReady(Clock::time_point now) {
  if (lingering_) return DropUntilEof();
  if (!handshake_done_) {
    Want want = Want::kClose;
    if (!Handshake(now, want)) return want;
  }
  if (!Write(now)) return Want::kClose;
  if (out_sent_ < out_.size()) return Want::kWrite;
  if (close_after_write_ && discard_left_ == 0) return Linger(now);
  if (!Read(now)) return Want::kClose;
  ServeComplete(now);
  UpdateBusy();
  if (out_sent_ < out_.size()) return Want::kFlush;
  return Next(now);
}

TlsConnection::Want TlsConnection::Flush(Clock::time_point now) {
  if (!Write(now)) return Want::kClose;
  UpdateBusy();
  return Next(now);
}

TlsConnection::Want TlsConnection::Next(Clock::time_point now) {
  if (out_sent_ < out_.size()) return Want::kWrite;
  if (close_after_write_ && discard_left_ == 0) return Linger(now);
  if (eof_) return Want::kClose;  // nothing left to answer: the peer is gone
  return write_blocks_read_ ? Want::kWrite : Want::kRead;
}

TlsConnection::Want TlsConnection::Linger(Clock::time_point now) {
  if (eof_) return Want::kClose;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // a close_notify, if the socket takes it now
  ERR_clear_error();
  shutdown(fd_, SHUT_WR);
  lingering_ = true;
  linger_since_ = now;
  return Want::kRead;
}

TlsConnection::Want TlsConnection::DropUntilEof() {
  char sink[4096];
  while (true) {
    ssize_t n = recv(fd_, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Want::kRead : Want::kClose;
  }
}

bool TlsConnection::Handshake(Clock::time_point now, Want& want) {
  ClearErrorQueue();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshake_done_ = true;
    caller_ = host_.Identify(ssl_, fd_);
    last_progress_ = now;
    return true;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      want = Want::kRead;
      break;
    case SSL_ERROR_WANT_WRITE:
      want = Want::kWrite;
      break;
    default:  // a scanner, a client refusing our certificate, TLS below 1.2: nothing to log
      ERR_clear_error();
      want = Want::kClose;
  }
  return false;
}

bool TlsConnection::Read(Clock::time_point now) {
  thread_local std::array<char, 64 * 1024> buffer;  // above the 16 KiB TLS record
  write_blocks_read_ = false;
  for (size_t budget = kReadBudget; budget > 0;) {
    ClearErrorQueue();
    int n = SSL_read(ssl_, buffer.data(), static_cast<int>(buffer.size()));
    if (n > 0) {
      last_progress_ = now;
      budget -= std::min(budget, static_cast<size_t>(n));
      std::string_view got(buffer.data(), static_cast<size_t>(n));
      if (discard_left_ > 0) {
        discard_left_ -= std::min(discard_left_, got.size());
        continue;  // the connection closes once the refused body is dropped
      }
      if (in_used_ == in_.size()) {  // nothing pending: the first byte of a new request
        request_started_ = now;
        in_.clear();
        in_used_ = 0;
      }
      in_.append(got);
      // One request per wake-up is the common case: serve it now rather than spend a read that
      // would find the socket empty (level-triggered epoll reports anything that follows).
      // SSL_has_pending: with read-ahead, bytes already taken from the socket wait in OpenSSL,
      // where epoll cannot see them.
      if (SSL_has_pending(ssl_) == 0 && HasWholeRequest()) return true;
      continue;
    }
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ:
        return true;
      case SSL_ERROR_WANT_WRITE:
        write_blocks_read_ = true;
        return true;
      case SSL_ERROR_ZERO_RETURN:
        eof_ = true;
        return true;
      default:  // a reset, or a FIN without close_notify: answer what was complete, then close
        ERR_clear_error();
        eof_ = true;
        return true;
    }
  }
  return true;
}

bool TlsConnection::HasWholeRequest() {
  std::string_view pending = std::string_view(in_).substr(in_used_);
  HeadParse p = ParseRequestHead(pending);
  return p.state == HeadParse::kBad ||
         (p.state == HeadParse::kComplete && pending.size() - p.head_size >= p.head.content_length);
}

void TlsConnection::ServeComplete(Clock::time_point now) {
  while (!close_after_write_ && in_used_ < in_.size()) {
    std::string_view pending = std::string_view(in_).substr(in_used_);
    HeadParse p = ParseRequestHead(pending);
    if (p.state == HeadParse::kIncomplete) return;
    if (p.state == HeadParse::kBad) {
      Respond({p.status, kJson, ErrorBody(p.reason), {}, /*close=*/true});
      in_used_ = in_.size();
      return;
    }
    const RequestHead& head = p.head;
    size_t body_have = pending.size() - p.head_size;
    if (head.content_length > kMaxReviewBody) {
      // Answer at once, then drop the body the client may still send, so that it reads the
      // answer instead of a reset.
      discard_left_ = head.content_length - std::min(head.content_length, body_have);
      in_used_ = in_.size();
      HttpResponse r = host_.Serve(head, {}, over_capacity_, caller_);
      r.close = true;
      Respond(std::move(r));
      return;
    }
    if (body_have < head.content_length) {
      if (head.expect_continue && !sent_continue_) {
        out_ += "HTTP/1.1 100 Continue\r\n\r\n";
        sent_continue_ = true;
      }
      return;
    }
    HttpResponse r = host_.Serve(head, pending.substr(p.head_size, head.content_length),
                                 over_capacity_, caller_);
    r.close = r.close || !head.keep_alive || stopping_ || over_capacity_;
    in_used_ += p.head_size + head.content_length;
    sent_continue_ = false;
    request_started_ = now;  // a pipelined request behind this one starts now
    Respond(std::move(r));
  }
}

void TlsConnection::Respond(HttpResponse r) {
  AppendResponseHead(out_, r.status, r.content_type, r.body.size(), r.close, r.extra_headers);
  out_ += r.body;
  if (r.close) close_after_write_ = true;
}

bool TlsConnection::Write(Clock::time_point now) {
  while (out_sent_ < out_.size()) {
    ClearErrorQueue();
    size_t left = std::min(out_.size() - out_sent_, static_cast<size_t>(INT_MAX));
    int n = SSL_write(ssl_, out_.data() + out_sent_, static_cast<int>(left));
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      last_progress_ = now;
      continue;
    }
    int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return true;
    ERR_clear_error();
    return false;
  }
  out_.clear();
  out_sent_ = 0;
  ReleaseIfLarge(out_);
  if (in_used_ == in_.size()) {
    in_.clear();
    in_used_ = 0;
    ReleaseIfLarge(in_);
  }
  return true;
}

void TlsConnection::UpdateBusy() {
  bool busy = in_used_ < in_.size() || out_sent_ < out_.size() || discard_left_ > 0;
  if (busy == busy_) return;
  busy_ = busy;
  host_.BusyChanged(busy);
}

bool TlsConnection::OnTick(Clock::time_point now, const ConnectionLimits& limits) {
  if (lingering_) return now - linger_since_ <= kLingerOnClose;
  if (!handshake_done_) return now - accepted_ <= limits.read;
  if (out_sent_ < out_.size()) return now - last_progress_ <= limits.write;
  if (discard_left_ > 0) return now - last_progress_ <= limits.read;
  if (in_used_ < in_.size()) {
    if (now - request_started_ <= limits.read) return true;
    // A request trickling in past the read timeout: say so, and close.
    in_used_ = in_.size();
    Respond({408, kJson, ErrorBody("request not received within the read timeout"), {}, true});
    if (!Write(now)) return false;
    if (out_sent_ == out_.size()) Linger(now);  // else the write timeout ends it
    return true;
  }
  if (stopping_) return now - stopped_ <= limits.linger;
  return now - last_progress_ <= limits.idle;
}

void TlsConnection::OnStop(Clock::time_point now) {
  stopping_ = true;
  stopped_ = now;
}

}  // namespace gpuadmit
