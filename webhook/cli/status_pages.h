// The status page's routes as the listeners take them: serve fills a StatusSources once and
// hands both listeners these pages (GET /status, /status.css, /status.json).
//
//   StatusSources sources{handler, metrics, "cluster file demo.json", ...};
//   server->SetPages(StatusWebPages(sources));  // `sources` must outlive the server
//
// Thread safety: the pages answer from any listener thread (webhook/status/status_routes.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "webhook/server/web_pages.h"
#include "webhook/status/status_model.h"

namespace gpuadmit {

WebPages StatusWebPages(const StatusSources& sources);

// What the overview's "build" line says: version, revision, build date, OpenSSL.
std::vector<std::pair<std::string, std::string>> StatusBuildFacts();

}  // namespace gpuadmit
