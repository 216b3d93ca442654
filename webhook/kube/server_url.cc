#include "webhook/kube/server_url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <charconv>

namespace gpuadmit {

bool IsIpAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

Result<std::string> ResolveOnce(const std::string& host) {
  if (IsIpAddress(host)) return host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) return Error{"cannot resolve " + host + ": " + gai_strerror(rc)};
  char ip[INET6_ADDRSTRLEN] = {};
  getnameinfo(found->ai_addr, found->ai_addrlen, ip, sizeof ip, nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(found);
  return std::string(ip);
}

Result<ServerUrl> ParseServerUrl(const std::string& url) {
  const Error bad{"server " + url + ": not an https://host[:port][/path] URL"};
  const std::string kScheme = "https://";
  if (url.rfind(kScheme, 0) != 0) return bad;
  size_t slash = url.find('/', kScheme.size());
  std::string authority = url.substr(kScheme.size(), slash - kScheme.size());
  ServerUrl out;
  if (slash != std::string::npos) out.path_prefix = url.substr(slash);
  while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
  // The port follows the last ':' that is not inside an IPv6 address's brackets.
  size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) != std::string::npos) {
    colon = std::string::npos;
  }
  std::string port = colon == std::string::npos ? "443" : authority.substr(colon + 1);
  out.host = authority.substr(0, colon);
  bool bracketed = out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']';
  if (bracketed) out.host = out.host.substr(1, out.host.size() - 2);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || out.port < 1 || out.port > 65535 ||
      out.host.empty() ||
      out.host.find_first_of(bracketed ? "[]@?#" : "[]@?#:") != std::string::npos) {
    return bad;
  }
  return out;
}

}  // namespace gpuadmit
