#include "webhook/cli/status_pages.h"

#include <chrono>

#include "webhook/cli/build_info.h"
#include "webhook/status/status_routes.h"

namespace gpuadmit {

WebPages StatusWebPages(const StatusSources& sources) {
  WebPages pages;
  pages.paths.assign(kStatusPaths.begin(), kStatusPaths.end());
  pages.answer = [&sources](std::string_view path, std::string_view query) {
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    std::optional<StatusAnswer> a = AnswerStatus(path, query, sources, now);
    if (!a) return WebPage{404, "application/json", "{\"error\":\"not found\"}", {}};
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
