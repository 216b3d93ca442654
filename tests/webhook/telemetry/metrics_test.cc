#include "webhook/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuadmit {
namespace {

TEST(Metrics, BuildInfoAndCertificateExpiryAreGaugesOnlyOnceSet) {
  Metrics metrics;
  std::string before = metrics.Render();
  EXPECT_EQ(before.find("gpuadmit_build_info"), std::string::npos);
  EXPECT_EQ(before.find("gpuadmit_certificate_expiry_timestamp_seconds"), std::string::npos);

  metrics.SetBuildInfo(R"(version="0.1.0",revision="abc")");
  metrics.SetCertificateExpiry(1795000000);
  std::string after = metrics.Render();
  EXPECT_NE(after.find("# TYPE gpuadmit_build_info gauge\n"
                       "gpuadmit_build_info{version=\"0.1.0\",revision=\"abc\"} 1\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("# TYPE gpuadmit_certificate_expiry_timestamp_seconds gauge\n"
                       "gpuadmit_certificate_expiry_timestamp_seconds 1795000000\n"),
            std::string::npos)
      << after;

  metrics.SetCertificateExpiry(1796000000);  // a reload that took
  EXPECT_NE(metrics.Render().find("gpuadmit_certificate_expiry_timestamp_seconds 1796000000\n"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuadmit
