#include "webhook/cli/build_info.h"

#include <openssl/crypto.h>

#include "gpuadmit_build_stamp.h"
#include "webhook/telemetry/metrics.h"  // generated: GPUADMIT_REVISION, GPUADMIT_BUILD_DATE

// The project's version and the libraries' come from CMake (webhook/cli/CMakeLists.txt).
#ifndef GPUADMIT_VERSION
#error "GPUADMIT_VERSION is set by CMake"
#endif

namespace gpuadmit {
namespace {

#if defined(__clang__)
constexpr std::string_view kCompiler = "clang " __clang_version__;
#elif defined(__GNUC__)
constexpr std::string_view kCompiler = "GCC " __VERSION__;
#else
constexpr std::string_view kCompiler = "unknown";
#endif

// "yaml-cpp" -> "yaml_cpp": a label name.
std::string LabelName(std::string_view library) {
  std::string out(library);
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

}  // namespace

const BuildInfo& ThisBuild() {
  static const BuildInfo info{GPUADMIT_VERSION, GPUADMIT_REVISION, GPUADMIT_BUILD_DATE, kCompiler};
  return info;
}

std::vector<std::pair<std::string_view, std::string>> LinkedLibraries() {
  std::vector<std::pair<std::string_view, std::string>> libraries = {
      {"openssl", OpenSSL_version(OPENSSL_VERSION_STRING)},
      {"simdjson", GPUADMIT_SIMDJSON_VERSION},
      {"yaml-cpp", GPUADMIT_YAML_CPP_VERSION},
      {"fmt", GPUADMIT_FMT_VERSION},
      {"cpp-httplib", GPUADMIT_HTTPLIB_VERSION},
  };
  if (std::string_view(GPUADMIT_JEMALLOC_VERSION) != "") {
    libraries.emplace_back("jemalloc", GPUADMIT_JEMALLOC_VERSION);
  }
  return libraries;
}

std::string VersionText() {
  const BuildInfo& b = ThisBuild();
  std::string out = "gpuadmit ";
  out.append(b.version).append("\n");
  auto line = [&out](std::string_view name, std::string_view value) {
    out.append(name).append(": ").append(value).append("\n");
  };
  line("revision", b.revision);
  line("built", b.date);
  line("compiler", b.compiler);
  for (const auto& [name, version] : LinkedLibraries()) line(name, version);
  return out;
}

std::string BuildInfoLabels() {
  const BuildInfo& b = ThisBuild();
  std::string out = "version=\"" + PrometheusLabelValue(b.version) + "\",revision=\"" +
                    PrometheusLabelValue(b.revision) + "\",build_date=\"" +
                    PrometheusLabelValue(b.date) + "\"";
  for (const auto& [name, version] : LinkedLibraries()) {
    out += "," + LabelName(name) + "=\"" + PrometheusLabelValue(version) + "\"";
  }
  return out;
}

}  // namespace gpuadmit
