// Report: what `gpuadmit report` (and the server's GET /report) tells an operator about the
// cluster's GPUs, in three sections (docs/report.md):
//   1. consolidation (consolidation.h): underused nodes and the GPUs a repacking would free;
//   2. MIG layout pressure (mig_pressure.h): which profiles keep running out while smaller
//      ones stay free;
//   3. time-slicing (time_slicing.h): replicas per GPU from utilisation and
//      burstiness over the metrics window.
// Built from values both the command line and a running server have: nodes, pods, the GPU
// metrics with their window, and gpuadmit's MIG counters. Rendered by report_render.h.
//
//   ReportInput input{.nodes = cluster.nodes, .pods = cluster.pods, .metrics = metrics};
//   Report report = BuildReport(input, {});
//   std::cout << ReportText(report);  // or ReportJson(report)
//
// Thread safety: pure functions; a Report is a plain value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/kube/kube_objects.h"
#include "core/report/consolidation.h"
#include "core/report/mig_pressure.h"
#include "core/report/report_pod.h"
#include "core/report/time_slicing.h"

namespace gpuadmit {

struct ReportOptions {
  ConsolidationOptions consolidation;  // the underused thresholds
};

struct ReportInput {
  std::vector<NodeFacts> nodes;
  std::vector<ReportPod> pods;
  // Null: no measured utilisation and no time-slicing section. Its host names must already be
  // node names (RenameNodes).
  std::shared_ptr<const ClusterGpuMetrics> metrics;
  // nullopt: no MIG pressure section (the counters are not known).
  std::optional<MigPressureCounters> mig_counters;
};

struct Report {
  ReportOptions options;
  Consolidation consolidation;
  bool has_metrics = false;
  size_t window_points = 0;  // the most utilisation points any GPU has in the window
  std::vector<TimeSlicingAdvice> time_slicing;  // empty without metrics
  bool has_mig_counters = false;
  std::vector<MigProfilePressure> mig_pressure;
  uint64_t mig_exhausted_total = 0;
};

Report BuildReport(const ReportInput& input, const ReportOptions& options);

}  // namespace gpuadmit
