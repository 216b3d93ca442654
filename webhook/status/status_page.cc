#include "webhook/status/status_page.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

#include "webhook/status/html.h"
#include "webhook/status/svg_chart.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kUsedColor = "#d9534f";
constexpr std::string_view kQueuedColor = "#f0ad4e";
constexpr std::string_view kReservedColor = "#5bc0de";
constexpr std::string_view kFreeColor = "#5cb85c";

std::string Fixed(double v, int decimals = 1) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
  return buffer;
}

// "12 s", "3 min", "2 h", "4 d".
std::string Age(int64_t ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  if (s < 172800) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " d";
}

void Cell(std::string& out, std::string_view text, std::string_view tag = "td") {
  out += '<';
  out += tag;
  out += '>';
  AppendHtml(out, text);
  out += "</";
  out += tag;
  out += '>';
}

void Row(std::string& out, std::string_view key, std::string_view value) {
  out += "<tr>";
  Cell(out, key, "th");
  Cell(out, value);
  out += "</tr>";
}

// One metric of one device: its chart over the window and min/mean/max.
void MetricCell(std::string& out, const GpuMetrics& device,
                std::optional<float> WindowPoint::*field, const std::optional<WindowStats>& stats,
                std::string_view name, std::string_view unit, double y_min, double y_max) {
  out += "<td class=\"metric\">";
  if (!stats) {
    out += "<span class=\"none\">no data</span></td>";
    return;
  }
  std::vector<ChartPoint> points;
  if (device.window != nullptr) {
    for (const WindowPoint& p : *device.window) {
      if (!(p.*field)) continue;
      double seconds = std::chrono::duration<double>(p.at - device.window->front().at).count();
      points.push_back({seconds, *(p.*field)});
    }
  }
  std::string summary = "min " + Fixed(stats->min) + " / mean " + Fixed(stats->mean) + " / max " +
                        Fixed(stats->max) + " " + std::string(unit);
  out += Sparkline(
      points, y_min, std::max(y_max, stats->max),
      std::string(name) + ": " + summary + " over " + std::to_string(stats->count) + " readings");
  out += "<div class=\"stats\">";
  AppendHtml(out, summary);
  out += "</div></td>";
}

void Overview(std::string& out, const StatusModel& m) {
  out += "<section id=\"overview\"><h2>Overview</h2><table class=\"kv\">";
  Row(out, "ready", m.ready ? "yes" : "no");
  Row(out, "inventory source", m.inventory_source);
  Row(out, "inventory age",
      m.inventory_at_unix_ms == 0 ? "no snapshot yet"
                                  : Age(m.now_unix_ms - m.inventory_at_unix_ms) + " (snapshot " +
                                        std::to_string(m.inventory_version) + ", " +
                                        FormatUnixMs(m.inventory_at_unix_ms) + ")");
  Row(out, "nodes", std::to_string(m.node_count));
  Row(out, "pods", std::to_string(m.pod_count));
  Row(out, "GPU metrics",
      m.metrics_age_ms < 0
          ? "none (every allocatable GPU counts as idle)"
          : std::to_string(m.metrics_nodes) + " nodes, read " + Age(m.metrics_age_ms) + " ago");
  uint64_t total = 0;
  for (uint64_t c : m.last_15_minutes) total += c;
  std::string outcomes;
  for (size_t i = 0; i < kReviewOutcomes; ++i) {
    if (!outcomes.empty()) outcomes += ", ";
    outcomes += std::string(ReviewOutcomeName(static_cast<ReviewOutcome>(i))) + " " +
                std::to_string(m.last_15_minutes[i]);
  }
  Row(out, "reviews, last 15 min", std::to_string(total) + ": " + outcomes);
  Row(out, "fail-open answers (since start)", std::to_string(m.fail_open_total));
  Row(out, "fail-closed answers (since start)", std::to_string(m.fail_closed_total));
  Row(out, "serving certificate expires",
      m.certificate_expiry_unix == 0
          ? "unknown"
          : FormatUnixMs(m.certificate_expiry_unix * 1000) + " (in " +
                Age(m.certificate_expiry_unix * 1000 - m.now_unix_ms) + ")");
  Row(out, "policy",
      (m.policy_path.empty() ? std::string("built-in default") : m.policy_path) +
          (m.policy_digest.empty() ? "" : ", sha256 " + m.policy_digest) +
          (m.policy_loaded_unix_ms == 0 ? ""
                                        : ", loaded " + FormatUnixMs(m.policy_loaded_unix_ms)));
  std::string build;
  for (const auto& [key, value] : m.build) {
    if (!build.empty()) build += ", ";
    build += key + " " + value;
  }
  Row(out, "build", build);
  out += "</table>";

  // Reviews by outcome, as a bar.
  std::vector<BarSegment> bar;
  constexpr std::string_view kOutcomeColors[] = {"#777", "#337ab7", kUsedColor, kQueuedColor,
                                                 "#8a0000"};
  for (size_t i = 0; i < kReviewOutcomes; ++i) {
    bar.push_back({std::string(ReviewOutcomeName(static_cast<ReviewOutcome>(i))),
                   static_cast<double>(m.last_15_minutes[i]), kOutcomeColors[i]});
  }
  out += "<p>Reviews in the last 15 minutes by outcome ";
  out += StackedBar(bar, "reviews in the last 15 minutes");
  out += "</p>";

  out += "<h3>GPUs by product</h3><table><tr><th>product</th><th>GPUs</th></tr>";
  for (const auto& [product, gpus] : m.gpus_by_product) {
    out += "<tr>";
    Cell(out, product.empty() ? "(no nvidia.com/gpu.product label)" : product);
    Cell(out, std::to_string(gpus));
    out += "</tr>";
  }
  out += "</table></section>";
}

void Resources(std::string& out, const StatusModel& m) {
  out +=
      "<section id=\"resources\"><h2>GPUs and MIG instances</h2><table><tr><th>resource</th>"
      "<th>allocatable</th><th>used</th><th>queued</th><th>reserved</th><th>free</th>"
      "<th>stranded slices</th><th></th></tr>";
  for (const ResourceView& r : m.resources) {
    out += "<tr class=\"resource\" data-resource=\"";
    AppendHtml(out, r.resource);
    out += "\">";
    Cell(out, r.resource);
    for (int64_t v : {r.allocatable, r.used, r.queued, r.reserved, r.free}) {
      Cell(out, std::to_string(v));
    }
    Cell(out, r.stranded_slices < 0 ? "" : std::to_string(r.stranded_slices));
    out += "<td>";
    std::vector<BarSegment> bar = {{"used", static_cast<double>(r.used), kUsedColor},
                                   {"queued", static_cast<double>(r.queued), kQueuedColor},
                                   {"reserved", static_cast<double>(r.reserved), kReservedColor},
                                   {"free", static_cast<double>(r.free), kFreeColor}};
    out += StackedBar(bar, r.resource);
    out += "</td></tr>";
  }
  out += "</table></section>";
}

std::string PageLink(const StatusQuery& q, size_t page, std::string_view text) {
  std::string href = "/status?node=";
  AppendQueryValue(href, q.node);
  href += "&per_page=" + std::to_string(q.per_page) + "&page=" + std::to_string(page);
  std::string out = "<a href=\"";
  AppendHtml(out, href);
  out += "\">";
  AppendHtml(out, text);
  out += "</a>";
  return out;
}

void Nodes(std::string& out, const StatusModel& m) {
  const StatusQuery& q = m.query;
  out +=
      "<section id=\"nodes\"><h2>Nodes and GPUs</h2>"
      "<form method=\"get\" action=\"/status\"><label>node or product contains "
      "<input name=\"node\" value=\"";
  AppendHtml(out, q.node);
  out += "\"></label> <label>per page <input name=\"per_page\" size=\"4\" value=\"" +
         std::to_string(q.per_page) + "\"></label> <button>filter</button></form>";
  size_t first = m.nodes.empty() ? 0 : (q.page - 1) * q.per_page + 1;
  out += "<p class=\"paging\">nodes " + std::to_string(first) + "&ndash;" +
         std::to_string(first == 0 ? 0 : first + m.nodes.size() - 1) + " of " +
         std::to_string(m.matching_nodes) + " matching, page " + std::to_string(q.page) + " of " +
         std::to_string(m.pages);
  if (q.page > 1) out += " " + PageLink(q, q.page - 1, "previous");
  if (q.page < m.pages) out += " " + PageLink(q, q.page + 1, "next");
  out += "</p>";
  for (const NodeView& n : m.nodes) {
    out += "<div class=\"node\" data-node=\"";
    AppendHtml(out, n.name);
    out += "\"><h3>";
    AppendHtml(out, n.name);
    out += "</h3><p>";
    AppendHtml(out, n.product.empty() ? "no GPU product label" : n.product);
    out += ", " + std::to_string(n.gpus) + " GPUs";
    out += n.ready ? ", Ready" : ", not Ready";
    if (n.unschedulable) out += ", cordoned";
    for (size_t i = 0; i < n.dra_pools.size(); ++i) {
      out += i == 0 ? ", DRA pools " : ", ";
      AppendHtml(out, n.dra_pools[i]);
    }
    out +=
        "</p><table><tr><th>resource</th><th>allocatable</th><th>used</th><th>queued</th>"
        "<th>free</th></tr>";
    for (const ResourceView& r : n.resources) {
      out += "<tr>";
      Cell(out, r.dra ? r.resource + " (DRA)" : r.resource);
      for (int64_t v : {r.allocatable, r.used, r.queued, r.free}) Cell(out, std::to_string(v));
      out += "</tr>";
    }
    out += "</table>";
    if (n.devices.empty()) {
      out += "<p class=\"none\">no GPU metrics for this node</p>";
    } else {
      out +=
          "<table class=\"devices\"><tr><th>device</th><th>utilisation %</th>"
          "<th>framebuffer used MiB</th><th>temperature &deg;C</th><th>power W</th></tr>";
      for (const GpuMetrics& d : n.devices) {
        out += "<tr class=\"device\"><td>GPU " + std::to_string(d.latest.gpu);
        if (d.latest.IsMigInstance()) {
          out += " MIG " + std::to_string(d.latest.mig_instance) + " ";
          AppendHtml(out, d.latest.mig_profile);
        }
        if (!d.latest.model_name.empty()) {
          out += "<br><small>";
          AppendHtml(out, d.latest.model_name);
          out += "</small>";
        }
        out += "</td>";
        double fb_total = d.latest.fb_used_mib.value_or(0) + d.latest.fb_free_mib.value_or(0);
        MetricCell(out, d, &WindowPoint::utilization_percent, d.utilization_percent, "utilisation",
                   "%", 0, 100);
        MetricCell(out, d, &WindowPoint::fb_used_mib, d.fb_used_mib, "framebuffer used", "MiB", 0,
                   fb_total);
        MetricCell(out, d, &WindowPoint::temperature_c, d.temperature_c, "temperature",
                   "\xC2\xB0"
                   "C",
                   20, 90);
        MetricCell(out, d, &WindowPoint::power_w, d.power_w, "power", "W", 0, 400);
        out += "</tr>";
      }
      out += "</table>";
    }
    out += "</div>";
  }
  out += "</section>";
}

void Decisions(std::string& out, const StatusModel& m) {
  out += "<section id=\"decisions\"><h2>Recent decisions</h2><p>The last " +
         std::to_string(m.recent.size()) +
         " reviews this replica answered, newest first.</p><table><tr><th>time</th>"
         "<th>object</th><th>outcome</th><th>asked</th><th>fallback</th><th>sharing</th>"
         "<th>node</th><th>warnings</th><th>trail</th></tr>";
  for (const DecisionRecord& r : m.recent) {
    out += "<tr class=\"decision\">";
    Cell(out, FormatUnixMs(r.at_unix_ms));
    Cell(out, r.object);
    Cell(out, ReviewOutcomeName(r.outcome));
    Cell(out, r.asked);
    Cell(out, r.fallback);
    Cell(out, r.sharing_mode);
    Cell(out, r.node);
    out += "<td>";
    for (const std::string& w : r.warnings) {
      AppendHtml(out, w);
      out += "<br>";
    }
    out += "</td><td>";
    if (!r.trail.empty()) {
      out += "<details><summary>" + std::to_string(r.trail.size()) + " steps</summary><ol>";
      for (const std::string& step : r.trail) {
        out += "<li>";
        AppendHtml(out, step);
        out += "</li>";
      }
      out += "</ol></details>";
    }
    out += "</td></tr>";
  }
  out += "</table></section>";
}

void QueueSection(std::string& out, const StatusModel& m) {
  out += "<section id=\"queue\"><h2>Capacity queue</h2>";
  if (!m.queue_enabled && m.queue_waiting == 0) {
    out += "<p class=\"none\">Off in the policy (queue.enabled).</p></section>";
    return;
  }
  out += "<p>" + std::to_string(m.queue_waiting) + (m.queue_waiting == 1 ? " pod" : " pods") +
         " waiting behind the capacity gate, in queue order (priority, then arrival)" +
         (m.queue_enabled ? "" : "; the queue is off, so the leader releases them") + ".</p>";
  if (m.queue.empty()) {
    out += "</section>";
    return;
  }
  out += "<table><tr><th>pod</th><th>asks</th><th>priority</th><th>created</th></tr>";
  for (const QueuedView& q : m.queue) {
    out += "<tr class=\"queued\">";
    Cell(out, q.pod);
    Cell(out, q.asks);
    Cell(out, std::to_string(q.priority));
    Cell(out, q.created);
    out += "</tr>";
  }
  out += "</table></section>";
}

void PolicySection(std::string& out, const StatusModel& m) {
  out += "<section id=\"policy\"><h2>Policy</h2>";
  if (m.policy_text.empty()) {
    out += "<p>The built-in default policy (no --policy file).</p>";
  } else {
    out += "<p>";
    AppendHtml(out, m.policy_path);
    out += ", as loaded " + FormatUnixMs(m.policy_loaded_unix_ms) + " (sha256 " + m.policy_digest +
           ")</p><pre>";
    AppendHtml(out, m.policy_text);
    out += "</pre>";
  }
  out += "</section>";
}

}  // namespace

std::string FormatUnixMs(int64_t unix_ms) {
  if (unix_ms == 0) return "never";
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string RenderStatusPage(const StatusModel& m) {
  std::string out;
  out.reserve(64 * 1024 + m.nodes.size() * 4096 + m.recent.size() * 1024);
  out +=
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>gpuadmit status</title><link rel=\"stylesheet\" href=\"/status.css\">"
      "</head><body><h1>gpuadmit status</h1><nav><a href=\"#overview\">overview</a> "
      "<a href=\"#resources\">GPUs and MIG</a> <a href=\"#nodes\">nodes</a> "
      "<a href=\"#decisions\">decisions</a> <a href=\"#queue\">queue</a> "
      "<a href=\"#policy\">policy</a> "
      "<a href=\"/status.json\">JSON</a> <a href=\"/metrics\">metrics</a></nav>";
  Overview(out, m);
  Resources(out, m);
  Nodes(out, m);
  Decisions(out, m);
  QueueSection(out, m);
  PolicySection(out, m);
  out += "<footer>rendered " + FormatUnixMs(m.now_unix_ms) + "</footer></body></html>\n";
  return out;
}

std::string_view StatusStylesheet() {
  return R"(body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; }
nav a { margin-right: 0.8em; }
section { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
table.kv th { width: 16em; }
td.metric svg { display: block; }
.stats { font-size: 0.8em; color: #555; }
.none { color: #999; }
div.node { border-top: 2px solid #ccc; margin-top: 1em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
footer { margin-top: 2em; color: #777; font-size: 0.8em; }
)";
}

}  // namespace gpuadmit
