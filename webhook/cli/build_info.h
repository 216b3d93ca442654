// BuildInfo: what this gpuadmit binary is: its version, the revision and date it was built from,
// and the versions of the libraries it links. `gpuadmit version` prints it; serve exports it as
// gpuadmit_build_info on /metrics.
//
//   std::cout << VersionText();
//   metrics.SetBuildInfo(BuildInfoLabels());
//
// Thread safety: pure functions over constants (and OpenSSL's version string).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

struct BuildInfo {
  std::string_view version;   // the project's, "0.1.0"
  std::string_view revision;  // git's 12-digit commit, "-dirty" when the tree differed; "unknown"
  std::string_view date;      // UTC, from SOURCE_DATE_EPOCH or the commit: "2026-11-25T13:40:00Z"
  std::string_view compiler;  // "GCC 12.2.0"
};
const BuildInfo& ThisBuild();

// {library, version} for each library linked, in a fixed order. OpenSSL's is the one loaded
// now (a security update of libssl3 shows here without a rebuild); the others are the versions
// built against.
std::vector<std::pair<std::string_view, std::string>> LinkedLibraries();

// The lines `gpuadmit version` prints: "gpuadmit 0.1.0", then "name: value" per fact.
std::string VersionText();

// `version="0.1.0",revision="...",build_date="...",openssl="3.0.17",...` for gpuadmit_build_info.
std::string BuildInfoLabels();

}  // namespace gpuadmit
