#include "webhook/server/http_request.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace gpuadmit {
namespace {

// What the apiserver sends (Go net/http, kube-apiserver 1.30), body left out.
constexpr std::string_view kApiserverHead =
    "POST /mutate?timeout=5s HTTP/1.1\r\n"
    "Host: gpuadmit.gpuadmit-system.svc:443\r\n"
    "User-Agent: kube-apiserver-admission\r\n"
    "Content-Length: 3412\r\n"
    "Accept: application/json, */*\r\n"
    "Content-Type: application/json\r\n"
    "Accept-Encoding: gzip\r\n"
    "\r\n";

TEST(ParseRequestHead, TheApiserversHeadGivesMethodPathQueryTypeAndLength) {
  std::string buffer = std::string(kApiserverHead) + "{\"kind\":";
  HeadParse p = ParseRequestHead(buffer);
  ASSERT_EQ(p.state, HeadParse::kComplete) << p.reason;
  EXPECT_EQ(p.head_size, kApiserverHead.size());
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.path, "/mutate");
  EXPECT_EQ(p.head.query, "timeout=5s");
  EXPECT_EQ(p.head.content_type, "application/json");
  EXPECT_EQ(p.head.content_length, 3412u);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_FALSE(p.head.expect_continue);
}

TEST(ParseRequestHead, EveryPrefixOfAHeadIsIncomplete) {
  for (size_t n = 0; n < kApiserverHead.size(); ++n) {
    EXPECT_EQ(ParseRequestHead(kApiserverHead.substr(0, n)).state, HeadParse::kIncomplete) << n;
  }
}

TEST(ParseRequestHead, BareLineFeedsAndLeadingEmptyLinesAreAccepted) {
  HeadParse p = ParseRequestHead("\r\n\nGET /healthz HTTP/1.1\nhost: x\n\n");
  ASSERT_EQ(p.state, HeadParse::kComplete) << p.reason;
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.path, "/healthz");
  EXPECT_EQ(p.head.query, "");
  EXPECT_EQ(p.head.content_length, 0u);
}

TEST(ParseRequestHead, HeaderNamesAreCaseInsensitiveAndValuesTrimmed) {
  HeadParse p = ParseRequestHead(
      "POST /mutate HTTP/1.1\r\ncontent-TYPE:  application/json; charset=utf-8 \r\n"
      "CONTENT-LENGTH:\t12\r\nconnection: Keep-Alive, Close\r\nexpect: 100-Continue\r\n\r\n");
  ASSERT_EQ(p.state, HeadParse::kComplete) << p.reason;
  EXPECT_EQ(p.head.content_type, "application/json; charset=utf-8");
  EXPECT_EQ(p.head.content_length, 12u);
  EXPECT_FALSE(p.head.keep_alive);
  EXPECT_TRUE(p.head.expect_continue);
}

TEST(ParseRequestHead, HttpOnePointZeroClosesUnlessItAsksToKeepAlive) {
  EXPECT_FALSE(ParseRequestHead("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(ParseRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
}

TEST(ParseRequestHead, AnOverflowingContentLengthIsTheLargestSizeForA413) {
  HeadParse p =
      ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n");
  ASSERT_EQ(p.state, HeadParse::kComplete) << p.reason;
  EXPECT_EQ(p.head.content_length, std::numeric_limits<size_t>::max());
}

struct BadCase {
  std::string head;
  int status;
  std::string reason;
};

TEST(ParseRequestHead, MalformedHeadsGetTheirStatusAndReason) {
  const BadCase cases[] = {
      {"POST /mutate\r\n\r\n", 400, "malformed request line"},
      {"POST  /mutate HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"PO(ST /mutate HTTP/1.1\r\n\r\n", 400, "malformed method"},
      {"GET http://x/mutate HTTP/1.1\r\n\r\n", 400, "request target must be a path"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "only HTTP/1.0 and HTTP/1.1 are served"},
      {"GET / HTTX/1.1\r\n\r\n", 400, "malformed HTTP version"},
      {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400, "malformed header field"},
      {"GET / HTTP/1.1\r\nBad name: x\r\n\r\n", 400, "malformed header field"},
      {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "folded header line"},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "malformed Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "malformed Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, "malformed Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
       "conflicting Content-Length"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411,
       "chunked request bodies are not supported; send Content-Length"},
  };
  for (const BadCase& c : cases) {
    HeadParse p = ParseRequestHead(c.head);
    EXPECT_EQ(p.state, HeadParse::kBad) << c.head;
    EXPECT_EQ(p.status, c.status) << c.head;
    EXPECT_EQ(p.reason, c.reason) << c.head;
  }
}

TEST(ParseRequestHead, AHeadThatDoesNotEndWithinSixteenKibibytesIs431) {
  std::string head = "GET / HTTP/1.1\r\nX-Long: " + std::string(kMaxRequestHead, 'a');
  HeadParse p = ParseRequestHead(head);
  EXPECT_EQ(p.state, HeadParse::kBad);
  EXPECT_EQ(p.status, 431);

  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-H: v\r\n";
  EXPECT_EQ(ParseRequestHead(many + "\r\n").status, 431);
}

TEST(AppendResponseHead, WritesStatusTypeLengthAndCloseInOneHead) {
  std::string out;
  AppendResponseHead(out, 200, "application/json", 42, /*close=*/false);
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n");
  out.clear();
  AppendResponseHead(out, 503, "application/json", 7, /*close=*/true, "Retry-After: 1\r\n");
  EXPECT_EQ(out,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: 7\r\nConnection: close\r\nRetry-After: 1\r\n\r\n");
}

TEST(ForwardedMark, CarriesTheCallersScopeBothWays) {
  HeadParse p = ParseRequestHead(
      "POST /mutate HTTP/1.1\r\nGpuadmit-Forwarded: address 10.0.0.5\r\n"
      "Content-Length: 0\r\n\r\n");
  ASSERT_EQ(p.state, HeadParse::kComplete);
  EXPECT_EQ(p.head.forwarded, "address 10.0.0.5");
  EXPECT_EQ(ScopeOfForwarded(p.head.forwarded), "address 10.0.0.5");
  EXPECT_EQ(ForwardedMark(""), "authenticated");
  EXPECT_EQ(ScopeOfForwarded(ForwardedMark("")), "");
  EXPECT_EQ(ScopeOfForwarded("1"), "");  // an earlier version's mark
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\n\r\n").head.forwarded, "");
}

}  // namespace
}  // namespace gpuadmit
