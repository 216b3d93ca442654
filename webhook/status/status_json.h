// GET /status.json: the StatusModel the page shows, for scripts and tests. Field names are
// camelCase, times are RFC 3339 strings with the raw milliseconds beside them, and a device's
// window is its points (seconds before the newest reading, and the four values).
//
//   std::string json = RenderStatusJson(CollectStatus(sources, query, now_ms));
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "webhook/status/status_model.h"

namespace gpuadmit {

std::string RenderStatusJson(const StatusModel& model);

}  // namespace gpuadmit
