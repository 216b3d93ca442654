// Prometheus samples: the two wire formats gpuadmit reads GPU metrics from, parsed into one
// sample type. The text exposition format is what dcgm-exporter serves on /metrics (and what a
// `--dcgm-file` holds); the instant-query answer is what Prometheus' HTTP API returns for
// GET /api/v1/query.
//
//   ExpositionSamples text = ParseExposition(file_bytes);  // never fails; bad lines are counted
//   if (text.skipped_lines > 0) -> warn, pointing at text.first_skipped_line
//   Result<std::vector<PromSample>> answer = ParseInstantQueryAnswer(body);
//   for (const PromSample& s : answer.value()) s.Label("Hostname") ...
//
// Thread safety: pure functions over values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuadmit {

struct PromLabel {
  std::string name;
  std::string value;

  bool operator==(const PromLabel&) const = default;
};

struct PromSample {
  std::string name;               // the metric name; empty when a query's aggregation dropped it
  std::vector<PromLabel> labels;  // in the order written, `__name__` excluded
  double value = 0;
  std::optional<int64_t> timestamp_ms;  // exposition: when written; query: the evaluation time

  // The value of label `label_name`, or "" when absent (Prometheus treats the two alike).
  std::string_view Label(std::string_view label_name) const;

  bool operator==(const PromSample&) const = default;
};

struct ExpositionSamples {
  std::vector<PromSample> samples;  // in text order; a series written twice appears twice
  // Non-blank lines that are neither comments nor valid samples (a publisher's title line, a
  // row of dashes). They are skipped rather than failing the whole text, and counted so that
  // the caller can say so.
  size_t skipped_lines = 0;
  size_t first_skipped_line = 0;  // 1-based; 0 when nothing was skipped
};

// Parses the Prometheus text exposition format (version 0.0.4; OpenMetrics text reads the same
// for gauges): `# HELP` / `# TYPE` / `# EOF` and other comments are ignored; label values may
// hold escaped quotes, backslashes and newlines; a sample may end with a timestamp in ms.
// Values accept NaN and +Inf/-Inf as Prometheus writes them.
ExpositionSamples ParseExposition(std::string_view text);

// Parses the body of GET /api/v1/query. "status":"error" becomes an Error carrying the
// errorType and error Prometheus sent; a resultType other than "vector" is an Error (gpuadmit
// only sends instant-vector queries), and so is any shape the API does not produce.
Result<std::vector<PromSample>> ParseInstantQueryAnswer(std::string_view body);

}  // namespace gpuadmit
