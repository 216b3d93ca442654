// HTTP/1.1 framing for the TLS front end: parse a request head, write a response head. Only what
// an admission webhook is asked: a request line, headers, and a Content-Length body. A
// chunked body is refused with 411 (the apiserver always sends Content-Length).
//
//   HeadParse p = ParseRequestHead(buffer);
//   if (p.state == HeadParse::kIncomplete) ... read more (at most kMaxRequestHead bytes)
//   if (p.state == HeadParse::kBad) ... answer p.status, close
//   p.head.content_length bytes of body follow p.head_size bytes of head.
//
// Views in RequestHead point into the parsed buffer. Bare-LF line ends are accepted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuadmit {

// 16 KiB: the apiserver's heads are under 1 KiB; nginx's default large_client_header_buffers.
inline constexpr size_t kMaxRequestHead = 16 * 1024;

struct RequestHead {
  std::string_view method;
  std::string_view path;   // without the query string
  std::string_view query;  // after '?', may be empty
  std::string_view content_type;
  size_t content_length = 0;
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only on request
  bool expect_continue = false;  // "Expect: 100-continue"
  std::string_view forwarded;    // Gpuadmit-Forwarded's value; empty when absent
};

// The header a replica adds to a review it forwards to the leader (ReviewForwarder), so that the
// one receiving it decides it there, leader or not, and never forwards it again. Honoured only
// from a peer replica (TlsServer). Its value carries the reservation scope of the review's caller
// as the forwarding replica saw it: "authenticated" for the scope "", else the scope itself.
inline constexpr std::string_view kForwardedHeader = "Gpuadmit-Forwarded";
// Views of `scope` or `mark`, or of a literal.
std::string_view ForwardedMark(std::string_view scope);
// The scope a mark carries: a mark other than "address ..." (a replica of an earlier version
// sent "1") is the authenticated callers' scope, "".
std::string_view ScopeOfForwarded(std::string_view mark);

struct HeadParse {
  enum State { kIncomplete, kComplete, kBad };
  State state = kIncomplete;
  RequestHead head;
  size_t head_size = 0;  // kComplete: bytes up to and including the blank line
  int status = 0;        // kBad: the status to answer (400, 411, 431, 501, 505)
  std::string reason;    // kBad: one line for the answer's body
};

// Parses the head at the start of `buffer`. kIncomplete until the blank line arrives; a head
// that has not ended within kMaxRequestHead bytes is kBad with 431.
HeadParse ParseRequestHead(std::string_view buffer);

// "HTTP/1.1 <status> <reason>\r\nContent-Type: ..\r\nContent-Length: ..\r\n[Connection: close]
// <extra>\r\n" appended to `out`; `extra_headers` is zero or more "Name: value\r\n" lines.
void AppendResponseHead(std::string& out, int status, std::string_view content_type,
                        size_t content_length, bool close, std::string_view extra_headers = {});

std::string_view ReasonPhrase(int status);

}  // namespace gpuadmit
