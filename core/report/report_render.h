// The two renderings of a Report: text for people, one line per finding as a recommendation
// ("Recommendation: Node gpu-node-02 is underutilized (25.0% used, 2/8 GPUs allocated)"), and
// JSON (`-o json`, GET /report) with stable camelCase field names, as Kubernetes writes them.
// docs/report.md shows both and lists every field.
//
//   std::string text = ReportText(BuildReport(input, options));
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "core/report/report.h"

namespace gpuadmit {

// Sections in order: consolidation, MIG layout pressure, time-slicing; each ends with a line
// saying why it is empty when it is. Ends with a newline.
std::string ReportText(const Report& report);

// One JSON object, pretty-printed (2 spaces), ending with a newline. Percentages and GPU counts
// are rounded to 2 decimals; a section whose input was not given is null.
std::string ReportJson(const Report& report);

}  // namespace gpuadmit
