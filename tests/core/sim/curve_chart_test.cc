// The fragmentation chart of `gpuadmit simulate --svg`: a standalone, escaped SVG document whose
// lines, legend, axes and marker can be read at a glance.
#include "core/sim/curve_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gpuadmit {
namespace {

// The fragmentation curve's shape: unallocated falls with demand, then levels off.
CurveSeries Falling(std::string name, double end_x, int n, std::optional<double> y_at_100) {
  CurveSeries series{.name = std::move(name), .points = {}, .y_at_100 = y_at_100};
  for (int i = 0; i < n; ++i) {
    const double x = end_x * i / (n - 1);
    series.points.push_back({.x = x, .y = std::max(100 - x, 10.0)});
  }
  return series;
}

CurveChart Chart(std::vector<CurveSeries> series) {
  return {.title = "Fragmentation, seed 003",
          .x_label = "arrived GPU demand (% of capacity)",
          .y_label = "unallocated GPUs (% of capacity)",
          .series = std::move(series)};
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The value of each polyline's points attribute, split into "x,y" pairs.
std::vector<std::vector<std::string>> Polylines(const std::string& svg) {
  std::vector<std::vector<std::string>> lines;
  const std::string open = "<polyline points=\"";
  for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const std::size_t begin = at + open.size();
    std::istringstream pairs(svg.substr(begin, svg.find('"', begin) - begin));
    std::vector<std::string> line;
    for (std::string pair; pairs >> pair;) line.push_back(pair);
    lines.push_back(line);
  }
  return lines;
}

TEST(CurveChartSvg, IsOneStandaloneSvgDocumentWithAViewBox) {
  const std::string svg = CurveChartSvg(Chart({Falling("baseline", 130, 50, 12.3)}));
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(Count(svg, "<svg"), 1);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"800\" height=\"480\" viewBox=\"0 0 800 480\""), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("url("), std::string::npos);
}

TEST(CurveChartSvg, DrawsOneUnfilledPolylinePerSeriesInDistinctColours) {
  std::vector<CurveSeries> series;
  for (int i = 0; i < 7; ++i) series.push_back(Falling("run" + std::to_string(i), 120, 20, {}));
  const std::string svg = CurveChartSvg(Chart(series));
  EXPECT_EQ(Count(svg, "<polyline "), 7);
  std::set<std::string> colours;
  for (std::size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    const std::string element = svg.substr(at, svg.find("/>", at) - at);
    EXPECT_NE(element.find(" fill=\"none\""), std::string::npos) << element;
    const std::size_t stroke = element.find(" stroke=\"#") + 9;
    colours.insert(element.substr(stroke, 7));
  }
  EXPECT_EQ(colours.size(), 7u);
  for (const std::vector<std::string>& line : Polylines(svg)) EXPECT_EQ(line.size(), 20u);
}

TEST(CurveChartSvg, LegendNamesEachSeriesWithItsUnallocatedShareAt100) {
  const std::string svg = CurveChartSvg(
      Chart({Falling("baseline", 130, 50, 12.34), Falling("policy.yaml", 130, 50, 4.0),
             Falling("no-value", 130, 50, std::nullopt)}));
  EXPECT_NE(svg.find(">baseline — 12.3% unallocated at 100%</text>"), std::string::npos);
  EXPECT_NE(svg.find(">policy.yaml — 4.0% unallocated at 100%</text>"), std::string::npos);
  EXPECT_NE(svg.find(">no-value</text>"), std::string::npos);
}

TEST(CurveChartSvg, HostileTextIsEscapedEverywhere) {
  const std::string hostile = "<script>alert(\"x\")</script> & 'y'";
  const std::string escaped =
      "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &apos;y&apos;";
  CurveChart chart = Chart({Falling(hostile, 100, 10, 1.0)});
  chart.title = chart.x_label = chart.y_label = hostile;
  const std::string svg = CurveChartSvg(chart);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("\"x\""), std::string::npos);
  EXPECT_EQ(svg.find("'y'"), std::string::npos);
  EXPECT_EQ(Count(svg, escaped), 5);  // <title>, title, x label, y label, legend
}

TEST(CurveChartSvg, TextThatIsNotXmlCharactersBecomesReplacementCharacters) {
  CurveChart chart = Chart({});
  chart.title = std::string(
      "a\x01"
      "b\xFF"
      "c\xC0\xAF"
      "d\xED\xA0\x80"
      "e",
      12);
  const std::string svg = CurveChartSvg(chart);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_NE(svg.find(">a" + r + "b" + r + "c" + r + r + "d" + r + r + r + "e</text>"),
            std::string::npos);
}

TEST(CurveChartSvg, LongNamesAreCutInTheLegendWithAnEllipsis) {
  const std::string svg = CurveChartSvg(Chart({Falling(std::string(60, 'n'), 100, 10, {})}));
  EXPECT_NE(svg.find(">" + std::string(48, 'n') + "\xE2\x80\xA6</text>"), std::string::npos);
}

TEST(CurveChartSvg, ThinsLongSeriesTo400PointsKeepingFirstAndLast) {
  // `ends` has the long series' first and last points, so their pixels must match.
  CurveSeries ends{.name = "ends", .points = {{0, 100}, {125, 10}}, .y_at_100 = {}};
  const std::string svg = CurveChartSvg(Chart({Falling("long", 125, 5000, {}), ends}));
  const std::vector<std::vector<std::string>> lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 400u);
  EXPECT_EQ(lines[0].front(), lines[1].front());
  EXPECT_EQ(lines[0].back(), lines[1].back());
  EXPECT_EQ(std::set<std::string>(lines[0].begin(), lines[0].end()).size(), 400u);
}

// The legend box's left edge: "x" of the only <rect> that has one.
std::string LegendX(const std::string& svg) {
  const std::size_t at = svg.find("<rect x=\"") + 9;
  return svg.substr(at, svg.find('"', at) - at);
}

TEST(CurveChartSvg, LegendSitsUpperRightWhereFallingCurvesLeaveRoom) {
  const std::string svg = CurveChartSvg(Chart({Falling("baseline", 130, 300, 10.0)}));
  EXPECT_EQ(Count(svg, "<rect x=\""), 1);
  EXPECT_GT(std::stod(LegendX(svg)), 400);
}

TEST(CurveChartSvg, LegendMovesToTheLeastCoveredCornerWhenTheUpperRightIsTaken) {
  // Little placed: unallocated stays at 95% whatever arrives, a line along the top.
  CurveSeries stuck{.name = "stuck", .points = {{0, 100}, {5, 95}, {130, 95}}, .y_at_100 = 95.0};
  const std::string svg = CurveChartSvg(Chart({stuck}));
  EXPECT_EQ(LegendX(svg), "74");  // 10 px in from the y axis at 64: the lower left, first free
  EXPECT_EQ(svg.find("<rect x=\"74\" y=\"60\""), std::string::npos);  // not the upper left
}

TEST(CurveChartSvg, XAxisRoundsUpTo130WhenPointsReach125) {
  const std::string svg = CurveChartSvg(Chart({Falling("baseline", 125, 50, {})}));
  EXPECT_NE(svg.find(">130</text>"), std::string::npos);
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">140</text>"), std::string::npos);
}

TEST(CurveChartSvg, XAxisSpansAtLeast100) {
  const std::string svg = CurveChartSvg(Chart({Falling("baseline", 40, 50, {})}));
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">110</text>"), std::string::npos);
}

TEST(CurveChartSvg, MarksFullDemandWithALabelledDashedLine) {
  const std::string svg = CurveChartSvg(Chart({Falling("baseline", 130, 50, {})}));
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\"/>"), std::string::npos);
  EXPECT_NE(svg.find(">100% demand</text>"), std::string::npos);
}

TEST(CurveChartSvg, EmptySeriesListStillDrawsTitleAxesAndMarker) {
  const std::string svg = CurveChartSvg(Chart({}));
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(Count(svg, "<polyline"), 0);
  EXPECT_NE(svg.find("<path d=\"M64 50V420H780\""), std::string::npos);
  for (const char* label :
       {">0</text>", ">50</text>", ">100</text>", ">100% demand</text>",
        ">Fragmentation, seed 003</text>", ">arrived GPU demand (% of capacity)</text>",
        ">unallocated GPUs (% of capacity)</text>"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
}

TEST(CurveChartSvg, NonFinitePointsAreSkippedAndOthersClampedToTheAxes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CurveSeries odd{.name = "odd",
                  .points = {{0, 100}, {nan, 50}, {50, inf}, {60, 150}, {-5, -20}},
                  .y_at_100 = nan};
  const std::string svg = CurveChartSvg(Chart({odd}));
  const std::vector<std::vector<std::string>> lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  // Plot corners: (0, 100) is (64, 50), y 150 clamps to the top, (-5, -20) to the origin.
  EXPECT_EQ(lines[0], (std::vector<std::string>{"64,50", "493.6,50", "64,420"}));
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_NE(svg.find(">odd</text>"), std::string::npos);
}

}  // namespace
}  // namespace gpuadmit
