// Small inline SVG charts for the status page: a sparkline of a metric's window and a stacked
// bar of counts. They use SVG presentation attributes only (no style attribute, no script), so
// they render under the page's `Content-Security-Policy: default-src 'self'`; every label is
// escaped.
//
//   std::string svg = Sparkline(points, 0, 100, "utilisation %: min 3 mean 41 max 97");
//   std::string bar = StackedBar({{"used", 5, "#d9534f"}, {"free", 2, "#5cb85c"}}, "2g.20gb");
//
// Thread safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace gpuadmit {

struct ChartPoint {
  double x = 0;  // time in seconds, any origin
  double y = 0;
};

// A line through `points` (in x order) scaled into width x height pixels, y from `y_min` at the
// bottom to `y_max` at the top (values outside are clamped); `title` is its tooltip and
// accessible name. No points: an empty frame. One point: a dot.
std::string Sparkline(std::span<const ChartPoint> points, double y_min, double y_max,
                      std::string_view title, int width = 120, int height = 24);

struct BarSegment {
  std::string label;
  double value = 0;
  std::string_view color;  // an SVG color: "#5cb85c"
};

// One horizontal bar split into `segments` in proportion to their values, each with a tooltip
// ("used: 5"); all zero: an empty frame.
std::string StackedBar(std::span<const BarSegment> segments, std::string_view title,
                       int width = 240, int height = 14);

}  // namespace gpuadmit
