#include "core/sim/curve_chart.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <string_view>

namespace gpuadmit {
namespace {

// 800 x 480: wide enough for 14 x-axis labels 50 px apart, small enough for a laptop screen.
constexpr double kWidth = 800;
constexpr double kHeight = 480;
// The plot area. Left 64 px: the rotated y label (baseline 18) and tick labels up to "100".
// Right 20 px: half of the last x label, "130". Top 50 px: the title (baseline 28) and the
// marker's label (baseline 44). Bottom 60 px: x tick labels (+18) and the x label (+42).
constexpr double kLeft = 64;
constexpr double kRight = kWidth - 20;
constexpr double kTop = 50;
constexpr double kBottom = kHeight - 60;
constexpr double kPlotWidth = kRight - kLeft, kPlotHeight = kBottom - kTop;
// 400 points over the plot's 716 px: under 2 px apart, finer than the 2 px stroke shows.
constexpr std::size_t kMaxPoints = 400;
// At most 13 x intervals: 0..130 by 10 puts labels 55 px apart, room for "130" (~20 px).
constexpr double kMaxXIntervals = 13;
// 1e9 % of capacity: beyond any real demand; keeps the axis, its ticks and labels finite.
constexpr double kMaxXAxis = 1e9;
// Okabe & Ito (2008), "Color Universal Design": told apart under the common colour-vision
// deficiencies. Their yellow is left out, too pale on white; the order puts contrast first.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000"};
// Past 7 series the colours repeat, so the second and third rounds are dashed and dotted.
constexpr const char* kDashes[] = {"", "8 4", "2 3"};
// Legend rows of 12 px text 18 px apart; 7 px a character, 0.58 em, a sans-serif's mean width.
constexpr double kLegendRow = 18;
constexpr double kCharWidth = 7;
// 48 characters, plus " — 12.3% unallocated at 100%" (29), is 540 px: inside the 716 px plot.
constexpr std::size_t kMaxNameChars = 48;

std::string Format(const char* format, double v) {
  char buf[64];  // 1e9 with "%.2f" is 13 characters; only an absurd y_at_100 is cut
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// At most 2 decimals, trailing zeros dropped: "70", "245.33".
std::string Num(double v) {
  std::string s = Format("%.2f", v);
  s.erase(s.find_last_not_of('0') + 1);  // "%.2f" always prints a '.', which stops the erase
  if (s.back() == '.') s.pop_back();
  return s;
}

// `in` as XML character data: & < > " ' escaped; bytes that are not UTF-8, and characters outside
// XML 1.0's Char production, replaced by U+FFFD; cut at `max_chars` characters with an ellipsis.
std::string XmlText(std::string_view in, std::size_t max_chars = std::string_view::npos) {
  constexpr char32_t kMinByLength[] = {0, 0, 0x80, 0x800, 0x10000};  // below: overlong
  constexpr std::string_view kSpecial = "&<>\"'";
  constexpr std::string_view kEntities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < in.size(); ++chars) {
    if (chars == max_chars) return out + "\xE2\x80\xA6";  // U+2026 …
    const auto lead = static_cast<unsigned char>(in[i]);
    const int ones = std::countl_one(lead);  // 0: ASCII; 2 to 4: a sequence's length
    const std::size_t len = ones == 0 ? 1 : ones >= 2 && ones <= 4 ? ones : 0;
    char32_t cp = len <= 1 ? lead : lead & (0x7F >> len);
    bool ok = len > 0 && in.size() - i >= len;
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto next = static_cast<unsigned char>(in[i + k]);
      ok = (next & 0xC0) == 0x80;
      cp = (cp << 6) | (next & 0x3F);
    }
    ok = ok && cp >= kMinByLength[len] && (cp >= 0x20 || cp == '\t' || cp == '\n' || cp == '\r') &&
         (cp < 0xD800 || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF));
    const std::size_t special = kSpecial.find(in[i]);        // never a byte of a longer sequence
    out.append(!ok                         ? "\xEF\xBF\xBD"  // U+FFFD, for one byte
               : special < kSpecial.size() ? kEntities[special]
                                           : in.substr(i, len));
    i += ok ? len : 1;
  }
  return out;
}

// Characters, not bytes: each UTF-8 lead byte counts once.
std::size_t CharCount(std::string_view s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

bool Finite(const CurvePoint& p) { return std::isfinite(p.x) && std::isfinite(p.y); }

// The largest finite x, rounded up to a multiple of 10, at least 100.
double XAxisMax(const CurveChart& chart) {
  double max_x = 100;
  for (const CurveSeries& series : chart.series) {
    for (const CurvePoint& p : series.points) {
      if (Finite(p)) max_x = std::max(max_x, std::min(p.x, kMaxXAxis));
    }
  }
  return std::ceil(max_x / 10) * 10;
}

// A round step, 1, 2 or 5 times a power of ten, giving at most kMaxXIntervals intervals.
double TickStep(double span) {
  const double raw = span / kMaxXIntervals;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / magnitude;  // in [1, 10)
  return magnitude * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

// The finite points, thinned to kMaxPoints evenly spaced by index, first and last kept.
std::vector<CurvePoint> Drawable(const std::vector<CurvePoint>& points) {
  std::vector<CurvePoint> finite;
  std::copy_if(points.begin(), points.end(), std::back_inserter(finite), Finite);
  if (finite.size() <= kMaxPoints) return finite;
  const std::size_t n = finite.size();  // in place: the index read is never below i
  for (std::size_t i = 0; i < kMaxPoints; ++i) finite[i] = finite[i * (n - 1) / (kMaxPoints - 1)];
  finite.resize(kMaxPoints);
  return finite;
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view attributes = "") {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
         Num(y2) + "\"" + std::string(attributes) + "/>\n";
}

std::string Text(double x, double y, std::string_view attributes, std::string_view escaped) {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + std::string(attributes) + ">" +
         std::string(escaped) + "</text>\n";
}

std::string Stroke(std::size_t index) {
  std::string dash = kDashes[(index / std::size(kPalette)) % std::size(kDashes)];
  return std::string(" stroke=\"") + kPalette[index % std::size(kPalette)] + "\"" +
         (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"");
}

using Pixel = CurvePoint;  // x and y in the document's pixels

// How many samples of the drawn lines, taken at most 4 px apart along each segment, fall in the
// w x h box whose top left corner is `at`.
int Hits(const std::vector<std::vector<Pixel>>& lines, Pixel at, double w, double h) {
  int hits = 0;
  for (const std::vector<Pixel>& line : lines) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      const Pixel& a = line[i];
      const Pixel& b = i + 1 < line.size() ? line[i + 1] : a;
      const int steps = 1 + static_cast<int>(std::hypot(b.x - a.x, b.y - a.y) / 4);
      for (int k = 0; k < steps; ++k) {
        const double x = a.x + (b.x - a.x) * k / steps, y = a.y + (b.y - a.y) * k / steps;
        hits += x >= at.x && x <= at.x + w && y >= at.y && y <= at.y + h;
      }
    }
  }
  return hits;
}

// A row per series: its line's stroke, its name and its value at 100% demand. The box goes in the
// plot corner that covers the fewest line samples, the upper right first: curves fall from
// (0, 100), and unallocated capacity stays high at full demand only when little could be placed.
std::string Legend(const CurveChart& chart, const std::vector<std::vector<Pixel>>& lines) {
  std::vector<std::string> entries;
  std::size_t widest = 0;
  for (const CurveSeries& series : chart.series) {
    std::string entry = XmlText(series.name, kMaxNameChars);
    if (series.y_at_100 && std::isfinite(*series.y_at_100)) {
      entry += " — " + Format("%.1f", *series.y_at_100) + "% unallocated at 100%";
    }
    widest = std::max(widest, CharCount(entry));  // an entity counts as 4 or 5: a wider box
    entries.push_back(entry);
  }
  // 48 px beside the text: the 24 px swatch, 8 px either side of it and 8 px after the text.
  const double w = std::min(48 + static_cast<double>(widest) * kCharWidth, kPlotWidth - 20);
  const double h = static_cast<double>(entries.size()) * kLegendRow + 8;
  const Pixel corners[] = {{kRight - 10 - w, kTop + 10},
                           {kLeft + 10, kBottom - 10 - h},
                           {kRight - 10 - w, kBottom - 10 - h},
                           {kLeft + 10, kTop + 10}};
  const Pixel* box = std::min_element(  // the first of the least covered
      std::begin(corners), std::end(corners),
      [&](Pixel a, Pixel b) { return Hits(lines, a, w, h) < Hits(lines, b, w, h); });
  std::string svg = "<rect x=\"" + Num(box->x) + "\" y=\"" + Num(box->y) + "\" width=\"" + Num(w) +
                    "\" height=\"" + Num(h) +
                    "\" fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#999999\"/>\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double row_y = box->y + 4 + kLegendRow * (static_cast<double>(i) + 0.5);
    svg += Line(box->x + 8, row_y, box->x + 32, row_y, Stroke(i) + " stroke-width=\"2\"");
    svg += Text(box->x + 40, row_y + 4, "", entries[i]);
  }
  return svg;
}

}  // namespace

std::string CurveChartSvg(const CurveChart& chart) {
  const double x_max = XAxisMax(chart);
  const auto px = [&](double x) { return kLeft + std::clamp(x, 0.0, x_max) / x_max * kPlotWidth; };
  const auto py = [](double y) { return kBottom - std::clamp(y, 0.0, 100.0) / 100 * kPlotHeight; };
  const std::string w = Num(kWidth), h = Num(kHeight);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
                    "\" viewBox=\"0 0 " + w + " " + h +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" +
                    XmlText(chart.title) + "</title>\n<rect width=\"" + w + "\" height=\"" + h +
                    "\" fill=\"#ffffff\"/>\n";

  // Gridlines run 4 px past the axes, so they are the ticks too.
  std::string grid = "<g stroke=\"#e0e0e0\">\n", labels = "<g font-size=\"11\" fill=\"#333\">\n";
  for (int y = 0; y <= 100; y += 10) {
    grid += Line(kLeft - 4, py(y), kRight, py(y));
    labels += Text(kLeft - 7, py(y) + 4, " text-anchor=\"end\"", Num(y));
  }
  const double step = TickStep(x_max);
  for (int i = 0; i * step <= x_max; ++i) {  // multiples of 10 and x_max are exact doubles
    grid += Line(px(i * step), kTop, px(i * step), kBottom + 4);
    labels += Text(px(i * step), kBottom + 18, " text-anchor=\"middle\"", Num(i * step));
  }
  svg += grid + "</g>\n" + labels + "</g>\n";
  svg += "<path d=\"M" + Num(kLeft) + " " + Num(kTop) + "V" + Num(kBottom) + "H" + Num(kRight) +
         "\" fill=\"none\" stroke=\"#333333\"/>\n";
  // The marker: where arrived demand equals capacity. Its label leans left at the right edge.
  const double marker = px(100);
  svg += Line(marker, kTop, marker, kBottom, " stroke=\"#555555\" stroke-dasharray=\"6 4\"");
  svg += Text(marker, kTop - 6,
              marker + 40 > kWidth ? " text-anchor=\"end\"" : " text-anchor=\"middle\"",
              "100% demand");
  std::vector<std::vector<Pixel>> lines(chart.series.size());
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    std::string points;
    for (const CurvePoint& p : Drawable(chart.series[i].points)) {
      lines[i].push_back({px(p.x), py(p.y)});
      points += (points.empty() ? "" : " ") + Num(px(p.x)) + "," + Num(py(p.y));
    }
    svg += "<polyline points=\"" + points + "\" fill=\"none\"" + Stroke(i) +
           " stroke-width=\"2\" stroke-linejoin=\"round\"/>\n";
  }
  if (!chart.series.empty()) svg += Legend(chart, lines);
  svg += Text(kWidth / 2, 28, " text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"",
              XmlText(chart.title));
  svg +=
      Text((kLeft + kRight) / 2, kHeight - 18, " text-anchor=\"middle\"", XmlText(chart.x_label));
  svg += Text(-(kTop + kBottom) / 2, 18, " text-anchor=\"middle\" transform=\"rotate(-90)\"",
              XmlText(chart.y_label));
  return svg + "</svg>\n";
}

}  // namespace gpuadmit
