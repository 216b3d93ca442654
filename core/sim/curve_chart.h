// CurveChart: the FGD paper's fragmentation curve as a standalone SVG, drawn by `gpuadmit simulate
// --svg FILE`. x is the GPU demand that has arrived, as a percentage of the cluster's GPU capacity;
// y is the GPU capacity left unallocated, as a percentage. One line per run (each policy and the
// baseline) in a colour-blind-safe palette, a legend naming each line with its value at 100%
// demand, and a dashed marker at x = 100, so the gap between runs where demand meets capacity
// reads at a glance.
//
//   CurveChart chart{.title = "Fragmentation, the demo cluster",
//                    .x_label = "arrived GPU demand (% of capacity)",
//                    .y_label = "unallocated GPUs (% of capacity)"};
//   chart.series.push_back({.name = "baseline", .points = baseline_points, .y_at_100 = 12.3});
//   std::string svg = CurveChartSvg(chart);  // the command writes it to FILE
//
// Thread safety: pure function.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpuadmit {

struct CurvePoint {
  double x = 0;  // arrived GPU demand, % of capacity
  double y = 0;  // unallocated GPU capacity, %
};

struct CurveSeries {
  std::string name;                // "baseline", "policy.yaml", ...
  std::vector<CurvePoint> points;  // in x order; may be thousands of points
  std::optional<double> y_at_100;  // shown in the legend when set
};

struct CurveChart {
  std::string title;
  std::string x_label;  // e.g. "arrived GPU demand (% of capacity)"
  std::string y_label;  // e.g. "unallocated GPUs (% of capacity)"
  std::vector<CurveSeries> series;
};

// A standalone SVG document (width 800, height 480, viewBox set), every text escaped
// (& < > " '), no external references, no script. Axes span 0..max(x) rounded up to a multiple
// of 10 (at least 100) and 0..100 for y. Series with more than 400 points are thinned
// (keep first, last, and evenly spaced points; a polyline never needs more than ~400 points).
// Points with a non-finite coordinate are skipped; others are clamped into the axes. The legend
// goes in the plot corner its box covers least of the lines, the upper right first. Text that is
// not UTF-8, or holds characters XML forbids, has them replaced by U+FFFD; legend names are cut at
// 48 characters.
std::string CurveChartSvg(const CurveChart& chart);

}  // namespace gpuadmit
