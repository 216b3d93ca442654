// The pages serve adds to both of its listeners (--listen over TLS, --metrics-listen):
//   GET /status, /status.css, /status.json   the status page (webhook/status/)
//   GET /report                              `gpuadmit report`'s text, over the live state
//   GET /report.json                         the same as JSON (`report -o json`)
// The report reads the cluster's nodes and pods when asked (the --cluster file again, or a copy
// of the watch's state), the GPU metrics serve holds, and this replica's MIG fallback counters.
//
//   StatusSources sources{handler, metrics, "cluster file demo.json", ...};
//   server->SetPages(ServeWebPages(sources, [&] { return ReportClusterOf(...); }));
//
// Thread safety: the pages answer from any listener thread; `objects` must be safe to call so.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/report/report_pod.h"
#include "core/result.h"
#include "webhook/server/web_pages.h"
#include "webhook/status/status_model.h"

namespace gpuadmit {

// The cluster's nodes and pods as GET /report reads them, on request.
using ReportObjects = std::function<Result<ReportCluster>()>;

// `sources` must outlive the listeners.
WebPages ServeWebPages(const StatusSources& sources, ReportObjects objects);

// What the overview's "build" line says: version, revision, build date, OpenSSL.
std::vector<std::pair<std::string, std::string>> StatusBuildFacts();

}  // namespace gpuadmit
