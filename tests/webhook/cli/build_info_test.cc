#include "webhook/cli/build_info.h"

#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <regex>
#include <string>

namespace gpuadmit {
namespace {

TEST(BuildInfo, VersionTextNamesTheVersionRevisionDateAndTheLoadedOpenSsl) {
  std::string text = VersionText();
  EXPECT_EQ(text.rfind("gpuadmit " + std::string(ThisBuild().version) + "\n", 0), 0u) << text;
  EXPECT_NE(text.find("\nrevision: " + std::string(ThisBuild().revision) + "\n"),
            std::string::npos);
  // From SOURCE_DATE_EPOCH or the commit: an ISO 8601 UTC time, or "unknown" outside git.
  EXPECT_TRUE(std::regex_match(std::string(ThisBuild().date),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|unknown)")))
      << ThisBuild().date;
  EXPECT_NE(text.find("\nopenssl: " + std::string(OpenSSL_version(OPENSSL_VERSION_STRING)) + "\n"),
            std::string::npos)
      << text;
  for (const char* library : {"simdjson", "yaml-cpp", "fmt", "cpp-httplib"}) {
    EXPECT_TRUE(std::regex_search(text, std::regex("\n" + std::string(library) + ": [0-9]")))
        << library << " missing from\n"
        << text;
  }
}

TEST(BuildInfo, LabelsAreOnePrometheusLabelSetWithEveryLibrary) {
  std::string labels = BuildInfoLabels();
  // name="value" pairs, comma separated: what goes between the braces of gpuadmit_build_info.
  EXPECT_TRUE(std::regex_match(labels, std::regex(R"([a-z_]+="[^"\\\n]*"(,[a-z_]+="[^"\\\n]*")*)")))
      << labels;
  EXPECT_NE(labels.find("version=\"" + std::string(ThisBuild().version) + "\""), std::string::npos);
  EXPECT_NE(labels.find(",yaml_cpp=\""), std::string::npos) << labels;
  EXPECT_NE(labels.find(",cpp_httplib=\""), std::string::npos) << labels;
}

}  // namespace
}  // namespace gpuadmit
