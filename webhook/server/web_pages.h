// WebPages: GET pages a listener serves beyond /mutate and the probes, given by the command
// that builds the server (serve: the status page), so that the server knows no page's content.
// Both listeners take them: TlsServer::SetPages and MetricsServer::SetPages.
//
//   server->SetPages({{"/status", "/status.json"}, [&](auto path, auto query) { ... }});
//
// Thread safety: `answer` is called from the listeners' threads, concurrently.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuadmit {

struct WebPage {
  int status = 200;
  std::string_view content_type;  // a literal: outlives the answer
  std::string body;
  std::string_view extra_headers;  // "Name: value\r\n" lines; a literal
};

struct WebPages {
  std::vector<std::string_view>
      paths;  // answered on GET (and HEAD is not served); other methods 405
  std::function<WebPage(std::string_view path, std::string_view query)> answer;

  bool Serves(std::string_view path) const {
    for (std::string_view p : paths) {
      if (p == path) return true;
    }
    return false;
  }
};

}  // namespace gpuadmit
