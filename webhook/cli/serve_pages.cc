#include "webhook/cli/serve_pages.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/report/report.h"
#include "core/report/report_render.h"
#include "webhook/cli/build_info.h"
#include "webhook/status/status_routes.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kNoStore = "Cache-Control: no-store\r\n";

WebPage JsonError(int status, std::string_view message) {
  return {status, "application/json",
          nlohmann::json({{"error", message}})
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          kNoStore};
}

// This replica's MIG decisions as the report's pressure counters: the fallback pairs, and the
// pods whose profile ran out with nothing smaller free (a total: the counter has no profile).
MigPressureCounters MigCountersOf(const Metrics& metrics) {
  MigPressureCounters counters;
  for (const Metrics::MigFallbackPair& p : metrics.MigFallbackPairs()) {
    counters.fallbacks.push_back({p.from, p.to, p.count});
  }
  counters.exhausted_total = metrics.Decisions(DecisionPoint::kMigExhausted);
  return counters;
}

WebPage AnswerReport(std::string_view path, const StatusSources& sources,
                     const ReportObjects& objects) {
  auto cluster = objects();
  if (!cluster.ok()) return JsonError(503, "no cluster to report on: " + cluster.error().message);
  ReportInput input{.nodes = std::move(cluster.value().nodes),
                    .pods = std::move(cluster.value().pods),
                    .metrics = sources.handler.gpu_metrics(),
                    .mig_counters = MigCountersOf(sources.metrics)};
  Report report = BuildReport(input, ReportOptions{});
  if (path == "/report.json") return {200, "application/json", ReportJson(report), kNoStore};
  return {200, "text/plain; charset=utf-8", ReportText(report), kNoStore};
}

}  // namespace

WebPages ServeWebPages(const StatusSources& sources, ReportObjects objects) {
  WebPages pages;
  pages.paths.assign(kStatusPaths.begin(), kStatusPaths.end());
  pages.paths.push_back("/report");
  pages.paths.push_back("/report.json");
  pages.answer = [&sources, objects = std::move(objects)](std::string_view path,
                                                          std::string_view query) {
    if (path == "/report" || path == "/report.json") return AnswerReport(path, sources, objects);
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    std::optional<StatusAnswer> a = AnswerStatus(path, query, sources, now);
    if (!a) return JsonError(404, "not found");
    return WebPage{a->status, a->content_type, std::move(a->body), a->extra_headers};
  };
  return pages;
}

std::vector<std::pair<std::string, std::string>> StatusBuildFacts() {
  const BuildInfo& build = ThisBuild();
  std::vector<std::pair<std::string, std::string>> facts = {
      {"version", std::string(build.version)},
      {"revision", std::string(build.revision)},
      {"built", std::string(build.date)}};
  for (const auto& [library, version] : LinkedLibraries()) {
    if (library == "openssl") facts.emplace_back("openssl", version);
  }
  return facts;
}

}  // namespace gpuadmit
