#include "bench/load/load_options.h"

#include <arpa/inet.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>

namespace gpuadmit::bench {
namespace {

// https://HOST:PORT/PATH with a numeric IPv4 host (run.sh measures 127.0.0.1 only).
bool ParseUrl(std::string_view url, Options& o) {
  constexpr std::string_view kScheme = "https://";
  if (url.substr(0, kScheme.size()) != kScheme) return false;
  url.remove_prefix(kScheme.size());
  size_t colon = url.find(':');
  size_t slash = url.find('/');
  if (colon == std::string_view::npos || slash == std::string_view::npos || slash < colon) {
    return false;
  }
  o.host = std::string(url.substr(0, colon));
  o.port = std::atoi(std::string(url.substr(colon + 1, slash - colon - 1)).c_str());
  o.path = std::string(url.substr(slash));
  return o.port > 0 && o.port < 65536;
}

// A request rate in req/s: a decimal number, nothing after it, 0 < rate <= 1e6 (a
// million a second is far beyond what one client thread can send over TLS).
bool ParseRate(const char* text, double& rate) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 1e6) return false;
  rate = v;
  return true;
}

}  // namespace

bool ParseOptions(int argc, char** argv, Options& o) {
  bool have_url = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--url") {
      if (!ParseUrl(v, o)) return false;
      have_url = true;
    } else if (a == "--body") {
      o.body_file = v;
    } else if (a == "--connections") {
      o.connections = std::atoi(v);
    } else if (a == "--threads") {
      o.threads = std::atoi(v);
    } else if (a == "--warmup") {
      o.warmup_s = std::atoi(v);
    } else if (a == "--duration") {
      o.duration_s = std::atoi(v);
    } else if (a == "--timeout") {
      o.timeout_s = std::atoi(v);
    } else if (a == "--rate") {
      if (!ParseRate(v, o.rate)) return false;
    } else if (a == "--latencies") {
      o.latencies_file = v;
    } else if (a == "--server-pid") {
      int pid = 0;
      auto [end, error] = std::from_chars(v, v + std::strlen(v), pid);
      if (error != std::errc() || *end != '\0' || pid <= 0) return false;
      o.server_pids.push_back(pid);
    } else {
      return false;
    }
  }
  return have_url && !o.body_file.empty() && o.connections > 0 && o.threads > 0 &&
         o.threads <= o.connections && o.warmup_s >= 0 && o.duration_s > 0 && o.timeout_s > 0;
}

}  // namespace gpuadmit::bench
