#include "webhook/status/svg_chart.h"

#include <algorithm>
#include <cstdio>

#include "webhook/status/html.h"

namespace gpuadmit {
namespace {

// A coordinate with one decimal: enough for pixels, short in the page.
void AppendNumber(std::string& out, double v) {
  char buffer[32];
  int n = std::snprintf(buffer, sizeof buffer, "%.1f", v);
  out.append(buffer, static_cast<size_t>(std::max(n, 0)));
}

// A value for a label: an integer without decimals, anything else with one.
void AppendValue(std::string& out, double v) {
  char buffer[32];
  int n = v == static_cast<double>(static_cast<long long>(v))
              ? std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(v))
              : std::snprintf(buffer, sizeof buffer, "%.1f", v);
  out.append(buffer, static_cast<size_t>(std::max(n, 0)));
}

void OpenSvg(std::string& out, int width, int height, std::string_view title) {
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) +
         " " + std::to_string(height) + "\" role=\"img\"><title>";
  AppendHtml(out, title);
  out += "</title><rect width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" fill=\"#f7f7f7\" stroke=\"#ccc\"/>";
}

}  // namespace

std::string Sparkline(std::span<const ChartPoint> points, double y_min, double y_max,
                      std::string_view title, int width, int height) {
  std::string out;
  OpenSvg(out, width, height, title);
  if (!points.empty()) {
    double x0 = points.front().x;
    double x1 = points.back().x;
    double span_x = x1 > x0 ? x1 - x0 : 1;
    double span_y = y_max > y_min ? y_max - y_min : 1;
    const double pad = 2;
    auto px = [&](double x) { return pad + (x - x0) / span_x * (width - 2 * pad); };
    auto py = [&](double y) {
      double clamped = std::clamp(y, y_min, y_min + span_y);
      return height - pad - (clamped - y_min) / span_y * (height - 2 * pad);
    };
    if (points.size() == 1) {
      out += "<circle cx=\"";
      AppendNumber(out, width / 2.0);
      out += "\" cy=\"";
      AppendNumber(out, py(points.front().y));
      out += "\" r=\"2\" fill=\"#337ab7\"/>";
    } else {
      out += "<polyline fill=\"none\" stroke=\"#337ab7\" stroke-width=\"1.5\" points=\"";
      for (const ChartPoint& p : points) {
        AppendNumber(out, px(p.x));
        out += ',';
        AppendNumber(out, py(p.y));
        out += ' ';
      }
      out.back() = '"';
      out += "/>";
    }
  }
  out += "</svg>";
  return out;
}

std::string StackedBar(std::span<const BarSegment> segments, std::string_view title, int width,
                       int height) {
  std::string out;
  OpenSvg(out, width, height, title);
  double total = 0;
  for (const BarSegment& s : segments) total += std::max(s.value, 0.0);
  double x = 0;
  for (const BarSegment& s : segments) {
    if (total <= 0 || s.value <= 0) continue;
    double w = s.value / total * width;
    out += "<rect x=\"";
    AppendNumber(out, x);
    out += "\" width=\"";
    AppendNumber(out, w);
    out += "\" height=\"" + std::to_string(height) + "\" fill=\"";
    AppendHtml(out, s.color);
    out += "\"><title>";
    AppendHtml(out, s.label);
    out += ": ";
    AppendValue(out, s.value);
    out += "</title></rect>";
    x += w;
  }
  out += "</svg>";
  return out;
}

}  // namespace gpuadmit
