// The webhook when its mounted files go away while it serves: the policy file and the serving
// certificate and key deleted. Each is wired as `gpuadmit serve` wires it (a FileReloader
// watching the directory, serve's 1 s poll behind it): the last good policy or pair stays in
// force, reviews are still answered with its decisions, a warning says why, and a good file put
// back is taken up without a restart.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "tests/fakes/config_map_dir.h"
#include "tests/fakes/review_probe.h"
#include "tests/fakes/stderr_capture.h"
#include "tests/fakes/test_cluster.h"
#include "tests/fakes/tls_files.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/os/file_reloader.h"
#include "webhook/server/tls_server.h"
#include "webhook/sources/policy_file_source.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using testing::HealthyAnswer;
using testing::kMigReview;
using testing::kPatience;
using testing::Patched;
using testing::ReadSourceFile;
using testing::ReviewUntil;

TEST(PolicyFileFaults, ADeletedPolicyKeepsTheLastGoodOneAndAGoodFilePutBackIsLoaded) {
  testing::StderrCapture log_lines;
  testing::ConfigMapDir dir("unused");  // for its temporary directory
  std::string path = std::filesystem::path(dir.Path()).parent_path() / "policy.yaml";
  std::ofstream(path) << "exemptNamespaces: [kube-system, default]\n";
  Logger log(LogLevel::kInfo);
  Metrics metrics;
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);
  AdmissionHandler handler(log, metrics, &ledger);
  handler.SetSnapshot(
      std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  // As serve wires --policy, with serve's 1 s poll behind the directory watch.
  PolicyFileSource policy(
      path, [&handler](std::shared_ptr<const Policy> p) { handler.SetPolicy(std::move(p)); },
      metrics, log);
  ASSERT_TRUE(policy.Load(/*initial=*/true)) << policy.error();
  policy.Start();
  json exempt = testing::ReadJsonFile(kMigReview);
  exempt = {{"apiVersion", "admission.k8s.io/v1"},
            {"kind", "AdmissionReview"},
            {"response", {{"uid", exempt["request"]["uid"]}, {"allowed", true}}}};
  std::string review = ReadSourceFile(kMigReview);
  EXPECT_EQ(json::parse(handler.Handle("application/json", review).body), exempt);

  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_TRUE(
      log_lines.WaitFor("msg=\"policy reload failed; keeping the last good policy\"", kPatience));
  EXPECT_EQ(json::parse(handler.Handle("application/json", review).body), exempt);
  EXPECT_EQ(metrics.Value(Counter::kPolicyReloadFailures), 1u);

  std::ofstream(path + ".new") << "failureMode: open\n";  // the default exemptions
  ASSERT_EQ(std::rename((path + ".new").c_str(), path.c_str()), 0);
  EXPECT_EQ(ReviewUntil(handler, kMigReview, Patched),
            HealthyAnswer(testing::DemoCluster(), kMigReview));
  // Counted and logged just after the new policy is handed over: waited for.
  ASSERT_TRUE(log_lines.WaitFor("msg=\"policy reloaded\"", kPatience));
  EXPECT_EQ(metrics.Value(Counter::kPolicyReloads), 1u);
  EXPECT_EQ(metrics.Value(Counter::kPolicyReloadFailures), 1u);
}

// Whether a fresh handshake verified against `ca_file` (the self-signed certificate itself)
// gets through, and the webhook then answers a review.
bool ServesWith(int port, const std::string& ca_file) {
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(ca_file.c_str());
  client.enable_server_certificate_verification(true);
  client.set_read_timeout(10, 0);
  auto res = client.Post("/mutate", ReadSourceFile(kMigReview), "application/json");
  return res && res->status == 200;
}

void CopyInto(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to + ".new");
  std::filesystem::rename(to + ".new", to);  // whole files, as a Secret mount swaps them
}

TEST(CertificateFileFaults, DeletedFilesKeepTheServingPairAndANewPairPutBackIsServed) {
  testing::StderrCapture log_lines;
  testing::TlsFiles first;
  testing::TlsFiles second(-60, 2 * 24 * 3600);
  testing::ConfigMapDir dir("unused");  // for its temporary directory
  std::string root = std::filesystem::path(dir.Path()).parent_path();
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.cert_file = root + "/tls.crt";
  options.key_file = root + "/tls.key";
  CopyInto(first.cert_file(), options.cert_file);
  CopyInto(first.key_file(), options.key_file);

  Logger log(LogLevel::kInfo);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  handler.SetPolicy(std::make_shared<const Policy>());
  handler.SetSnapshot(
      std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::DemoCluster())));
  auto made = TlsServer::Create(options, handler, metrics, log);
  ASSERT_TRUE(made.ok()) << made.error().message;
  TlsServer& server = *made.value();
  std::thread serving([&] { server.Run(); });
  struct StopAtExit {  // also when an assertion ends the test early
    TlsServer& server;
    std::thread& serving;
    ~StopAtExit() {
      server.Stop();
      serving.join();
    }
  } stop_at_exit{server, serving};
  // As serve wires --tls-cert and --tls-key: either file changing reloads the pair.
  auto reload_certificate = [&] { ReloadServingCertificate(server, metrics, log); };
  FileReloader cert_reloader(options.cert_file, seconds(1), reload_certificate);
  FileReloader key_reloader(options.key_file, seconds(1), reload_certificate);
  cert_reloader.Start();
  key_reloader.Start();
  std::string first_not_after = server.CertificateNotAfter();
  int64_t now =
      std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  EXPECT_NEAR(server.CertificateNotAfterUnix(), now - 60 + 24 * 3600, 5);
  EXPECT_TRUE(ServesWith(server.port(), first.cert_file()));

  std::filesystem::remove(options.cert_file);
  std::filesystem::remove(options.key_file);
  ASSERT_TRUE(log_lines.WaitFor("msg=\"serving certificate reload refused", kPatience));
  EXPECT_TRUE(server.ReloadCertificate().has_value());
  EXPECT_EQ(server.CertificateNotAfter(), first_not_after);
  EXPECT_TRUE(ServesWith(server.port(), first.cert_file()));
  EXPECT_EQ(metrics.Value(Counter::kCertReloads), 0u);

  CopyInto(second.key_file(), options.key_file);
  CopyInto(second.cert_file(), options.cert_file);
  ASSERT_TRUE(log_lines.WaitFor("msg=\"serving certificate reloaded\"", kPatience));
  EXPECT_NE(server.CertificateNotAfter(), first_not_after);
  EXPECT_NEAR(server.CertificateNotAfterUnix(), now - 60 + 2 * 24 * 3600, 5);
  // The alert on expiry reads the pair presented now.
  EXPECT_NE(metrics.Render().find("\ngpuadmit_certificate_expiry_timestamp_seconds " +
                                  std::to_string(server.CertificateNotAfterUnix()) + "\n"),
            std::string::npos);
  EXPECT_TRUE(ServesWith(server.port(), second.cert_file()));
  EXPECT_FALSE(ServesWith(server.port(), first.cert_file()));
}

}  // namespace
}  // namespace gpuadmit
