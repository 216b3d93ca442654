// The status routes both of serve's listeners answer (--listen over TLS, --metrics-listen):
//   GET /status       the page (status_page.h), with Content-Security-Policy: default-src 'self'
//   GET /status.css   its stylesheet
//   GET /status.json  the same model as JSON (status_json.h)
// A bad query (?page=0) is answered 400 with the reason.
//
//   std::optional<StatusAnswer> a = AnswerStatus(head.path, head.query, sources, now_ms);
//
// Thread safety: as CollectStatus: any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "webhook/status/status_model.h"

namespace gpuadmit {

inline constexpr std::array<std::string_view, 3> kStatusPaths = {"/status", "/status.css",
                                                                 "/status.json"};

struct StatusAnswer {
  int status = 200;
  std::string_view content_type;
  std::string body;
  std::string_view extra_headers;  // "Name: value\r\n" lines
};

// nullopt for a path not in kStatusPaths.
std::optional<StatusAnswer> AnswerStatus(std::string_view path, std::string_view query,
                                         const StatusSources& sources, int64_t now_unix_ms);

}  // namespace gpuadmit
