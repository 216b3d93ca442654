#include "webhook/server/http_request.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/text/append.h"

namespace gpuadmit {
namespace {

// 100: the apiserver sends about eight; more is a client to stop reading from.
constexpr int kMaxHeaders = 100;

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return Lower(x) == Lower(y); });
}

// RFC 9110 token characters: what a method and a header name are made of.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether the comma-separated `list` holds `token` (case-insensitive), as Connection does.
bool ListHas(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (EqualsIgnoreCase(TrimSpace(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

HeadParse Bad(int status, std::string reason) {
  HeadParse p;
  p.state = HeadParse::kBad;
  p.status = status;
  p.reason = std::move(reason);
  return p;
}

// Splits "METHOD /path?query HTTP/1.1". Returns the error, or an empty parse with kComplete.
HeadParse ParseRequestLine(std::string_view line, RequestHead& head, bool& http10) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Bad(400, "malformed request line");
  }
  head.method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(head.method)) return Bad(400, "malformed method");
  if (target.empty() || target.front() != '/') return Bad(400, "request target must be a path");
  size_t q = target.find('?');
  head.path = target.substr(0, q);
  if (q != std::string_view::npos) head.query = target.substr(q + 1);
  if (version == "HTTP/1.1") {
    http10 = false;
  } else if (version == "HTTP/1.0") {
    http10 = true;
  } else if (version.substr(0, 5) == "HTTP/") {
    return Bad(505, "only HTTP/1.0 and HTTP/1.1 are served");
  } else {
    return Bad(400, "malformed HTTP version");
  }
  HeadParse ok;
  ok.state = HeadParse::kComplete;
  return ok;
}

}  // namespace

HeadParse ParseRequestHead(std::string_view buffer) {
  std::string_view window = buffer.substr(0, kMaxRequestHead);
  size_t pos = 0;
  // A client may send an empty line before the request line (RFC 9112 2.2); skip them.
  while (pos < window.size() && (window[pos] == '\r' || window[pos] == '\n')) ++pos;

  RequestHead head;
  bool http10 = false;
  bool have_request_line = false;
  bool have_length = false;
  bool connection_close = false;
  bool connection_keep_alive = false;
  int headers = 0;
  while (true) {
    size_t eol = window.find('\n', pos);
    if (eol == std::string_view::npos) {
      if (buffer.size() >= kMaxRequestHead) return Bad(431, "request head larger than 16 KiB");
      return HeadParse{};
    }
    std::string_view line = window.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = eol + 1;
    if (!have_request_line) {
      HeadParse r = ParseRequestLine(line, head, http10);
      if (r.state == HeadParse::kBad) return r;
      have_request_line = true;
      continue;
    }
    if (line.empty()) break;  // the blank line: the head is complete
    if (++headers > kMaxHeaders) return Bad(431, "more than 100 header fields");
    if (line.front() == ' ' || line.front() == '\t') return Bad(400, "folded header line");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Bad(400, "malformed header field");
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = TrimSpace(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "content-length")) {
      size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || end != value.data() + value.size() ||
          (ec != std::errc() && ec != std::errc::result_out_of_range)) {
        return Bad(400, "malformed Content-Length");
      }
      if (ec == std::errc::result_out_of_range) n = std::numeric_limits<size_t>::max();
      if (have_length && n != head.content_length) return Bad(400, "conflicting Content-Length");
      head.content_length = n;
      have_length = true;
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      return Bad(411, "chunked request bodies are not supported; send Content-Length");
    } else if (EqualsIgnoreCase(name, "content-type")) {
      head.content_type = value;
    } else if (EqualsIgnoreCase(name, "connection")) {
      connection_close = connection_close || ListHas(value, "close");
      connection_keep_alive = connection_keep_alive || ListHas(value, "keep-alive");
    } else if (EqualsIgnoreCase(name, "expect")) {
      head.expect_continue = EqualsIgnoreCase(value, "100-continue");
    } else if (EqualsIgnoreCase(name, kForwardedHeader)) {
      head.forwarded = value;
    }
  }
  head.keep_alive = !connection_close && (!http10 || connection_keep_alive);
  HeadParse p;
  p.state = HeadParse::kComplete;
  p.head = head;
  p.head_size = pos;
  return p;
}

std::string_view ForwardedMark(std::string_view scope) {
  return scope.empty() ? "authenticated" : scope;
}

std::string_view ScopeOfForwarded(std::string_view mark) {
  return mark.starts_with("address ") ? mark : "";
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

void AppendResponseHead(std::string& out, int status, std::string_view content_type,
                        size_t content_length, bool close, std::string_view extra_headers) {
  AppendAll(out, {"HTTP/1.1 ", Digits(status), " ", ReasonPhrase(status),
                  "\r\nContent-Type: ", content_type,
                  "\r\nContent-Length: ", Digits(static_cast<int64_t>(content_length)),
                  close ? "\r\nConnection: close\r\n" : "\r\n", extra_headers, "\r\n"});
}

}  // namespace gpuadmit
