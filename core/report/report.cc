#include "core/report/report.h"

#include <algorithm>

namespace gpuadmit {

Report BuildReport(const ReportInput& input, const ReportOptions& options) {
  Report r;
  r.options = options;
  r.consolidation =
      Consolidate(input.nodes, input.pods, input.metrics.get(), options.consolidation);
  if (input.metrics) {
    r.has_metrics = true;
    r.time_slicing = AdviseTimeSlicing(input.nodes, *input.metrics);
    for (const TimeSlicingAdvice& a : r.time_slicing) {
      r.window_points = std::max(r.window_points, a.points);
    }
  }
  if (input.mig_counters) {
    r.has_mig_counters = true;
    r.mig_pressure = MigPressure(*input.mig_counters, input.nodes, input.pods);
    r.mig_exhausted_total = input.mig_counters->exhausted_total;
  }
  return r;
}

}  // namespace gpuadmit
