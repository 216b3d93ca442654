// The status page: StatusModel as one HTML document with inline SVG charts, no script and no
// external request. Its stylesheet is served beside it at /status.css, because the page's
// `Content-Security-Policy: default-src 'self'` refuses inline styles.
//
//   std::string html = RenderStatusPage(CollectStatus(sources, query, now_ms));
//
// Sections (each an element with an id, which the browser test reads): #overview, #resources
// (per resource and MIG profile: allocatable, used, queued, reserved, free, stranded),
// #nodes (the filtered page, each node's GPUs with utilisation, framebuffer, temperature and
// power over the metrics window: a chart and min/mean/max), #decisions (the recent reviews),
// #policy (the policy as loaded).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "webhook/status/status_model.h"

namespace gpuadmit {

std::string RenderStatusPage(const StatusModel& model);

// The page's stylesheet (GET /status.css).
std::string_view StatusStylesheet();

// "2026-11-25T18:04:05Z"; "never" for 0.
std::string FormatUnixMs(int64_t unix_ms);

}  // namespace gpuadmit
