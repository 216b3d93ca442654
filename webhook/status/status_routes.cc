#include "webhook/status/status_routes.h"

#include <nlohmann/json.hpp>

#include "webhook/status/status_json.h"
#include "webhook/status/status_page.h"

namespace gpuadmit {
namespace {

// Scripts, styles, images, frames and connections: only from this origin; the page itself uses
// none but its stylesheet.
constexpr std::string_view kPageHeaders =
    "Content-Security-Policy: default-src 'self'\r\nX-Content-Type-Options: nosniff\r\n"
    "Cache-Control: no-store\r\n";
constexpr std::string_view kDataHeaders =
    "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n";

}  // namespace

std::optional<StatusAnswer> AnswerStatus(std::string_view path, std::string_view query,
                                         const StatusSources& sources, int64_t now_unix_ms) {
  if (path == "/status.css") {
    return StatusAnswer{200, "text/css; charset=utf-8", std::string(StatusStylesheet()),
                        kDataHeaders};
  }
  if (path != "/status" && path != "/status.json") return std::nullopt;
  auto parsed = ParseStatusQuery(query);
  if (!parsed.ok()) {
    std::string body = nlohmann::json({{"error", parsed.error().message}})
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return StatusAnswer{400, "application/json", std::move(body), kDataHeaders};
  }
  StatusModel model = CollectStatus(sources, parsed.value(), now_unix_ms);
  if (path == "/status.json") {
    return StatusAnswer{200, "application/json", RenderStatusJson(model), kDataHeaders};
  }
  return StatusAnswer{200, "text/html; charset=utf-8", RenderStatusPage(model), kPageHeaders};
}

}  // namespace gpuadmit
