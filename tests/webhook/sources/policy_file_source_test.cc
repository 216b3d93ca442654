#include "webhook/sources/policy_file_source.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/fakes/config_map_dir.h"

namespace gpuadmit {
namespace {

using testing::ConfigMapDir;

// A PolicyFileSource over a ConfigMap-like directory, and what it published.
class PolicySourceTest : public ::testing::Test {
 protected:
  // Writes the first version, then makes the source (as serve does: the file exists) and loads
  // it; the result of that first load.
  bool LoadFirst(const std::string& text, PolicyFileSource::Servable servable = nullptr) {
    if (!dir_.Publish(text)) return false;
    source_ = std::make_unique<PolicyFileSource>(
        dir_.Path(),
        [this](std::shared_ptr<const Policy> p) { published_.push_back(std::move(p)); }, metrics_,
        log_);
    source_->SetServable(std::move(servable));
    ::testing::internal::CaptureStderr();
    bool loaded = source_->Load(/*initial=*/true);
    startup_log_ = ::testing::internal::GetCapturedStderr();
    return loaded;
  }

  // One poll; the log lines it wrote, each without its timestamp.
  std::vector<std::string> CheckNowLogging(bool& changed) {
    ::testing::internal::CaptureStderr();
    changed = source_->CheckNow();
    std::string text = ::testing::internal::GetCapturedStderr();
    std::vector<std::string> lines;
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      std::string line = text.substr(start, end - start);
      lines.push_back(line.substr(line.find(' ') + 1));
      start = end == std::string::npos ? text.size() : end + 1;
    }
    return lines;
  }

  ConfigMapDir dir_{"policy.yaml"};
  Metrics metrics_;
  Logger log_{LogLevel::kInfo};
  std::vector<std::shared_ptr<const Policy>> published_;
  std::unique_ptr<PolicyFileSource> source_;
  std::string startup_log_;
};

TEST_F(PolicySourceTest, AGoodNewVersionIsPublishedLoggedAndCounted) {
  ASSERT_TRUE(LoadFirst("failureMode: open\n"));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_TRUE(*published_[0] == Policy{});
  bool changed = true;
  EXPECT_TRUE(CheckNowLogging(changed).empty());
  EXPECT_FALSE(changed);

  ASSERT_TRUE(dir_.Publish("exemptNamespaces: [kube-system, ml]\n"));
  EXPECT_EQ(CheckNowLogging(changed),
            (std::vector<std::string>{"level=info msg=\"policy reloaded\" file=" + dir_.Path()}));
  EXPECT_TRUE(changed);
  ASSERT_EQ(published_.size(), 2u);
  Policy want;
  want.exempt_namespaces = {"kube-system", "ml"};
  EXPECT_TRUE(*published_[1] == want);
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloads), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloadFailures), 0u);
}

TEST_F(PolicySourceTest, ABadVersionIsRefusedTheLastGoodStaysAndAWarningNamesTheFirstIssue) {
  ASSERT_TRUE(LoadFirst("failureMode: closed\n"));

  ASSERT_TRUE(dir_.Publish("failureMode: sometimes\ncolour: blue\n"));
  bool changed = false;
  EXPECT_EQ(
      CheckNowLogging(changed),
      (std::vector<std::string>{
          "level=warn msg=\"policy reload failed; keeping the last good policy\" file=" +
          dir_.Path() + " error=\"" + dir_.Path() +
          ":1:14: failureMode must be one of open, closed, not \\\"sometimes\\\"\" issues=2"}));
  EXPECT_TRUE(changed);
  EXPECT_EQ(published_.size(), 1u);
  // The status page's copy of the text stays the one in force.
  ASSERT_NE(source_->loaded(), nullptr);
  EXPECT_EQ(source_->loaded()->text, "failureMode: closed\n");
  EXPECT_EQ(source_->loaded()->path, dir_.Path());
  EXPECT_GT(source_->loaded()->at_unix_ms, 0);
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloadFailures), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloads), 0u);
  EXPECT_EQ(source_->error(),
            dir_.Path() + ":1:14: failureMode must be one of open, closed, not \"sometimes\"\n" +
                dir_.Path() + ":2:1: unknown key \"colour\" in the policy");

  // Fixed: the next good version takes over.
  ASSERT_TRUE(dir_.Publish("failureMode: open\n"));
  EXPECT_EQ(CheckNowLogging(changed).size(), 1u);
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(published_[1]->failure_mode, FailureMode::kOpen);
  EXPECT_EQ(source_->loaded()->text, "failureMode: open\n");
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloads), 1u);
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloadFailures), 1u);
}

TEST_F(PolicySourceTest, ABadFileAtStartIsAnErrorNotAReloadFailure) {
  EXPECT_FALSE(LoadFirst("failureMode: sometimes\n"));
  EXPECT_EQ(startup_log_, "");
  EXPECT_EQ(source_->error(),
            dir_.Path() + ":1:14: failureMode must be one of open, closed, not \"sometimes\"");
  EXPECT_TRUE(published_.empty());
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloadFailures), 0u);
}

TEST_F(PolicySourceTest, APolicyTheServerCannotActOnRefusesToStartAndIsRefusedOnReload) {
  // As serve refuses the queue where it cannot lift gates.
  auto servable = [](const Policy& p) -> std::string {
    return p.queue.enabled ? "queue.enabled needs the Kubernetes API" : "";
  };
  const std::string refused = dir_.Path() + ": queue.enabled needs the Kubernetes API";
  EXPECT_FALSE(LoadFirst("queue: {enabled: true}\n", servable));
  EXPECT_EQ(source_->error(), refused);
  EXPECT_TRUE(published_.empty());

  ASSERT_TRUE(dir_.Publish("queue: {enabled: false, timeout: 2m}\n"));
  ASSERT_TRUE(source_->Load(/*initial=*/true));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0]->queue.timeout_seconds, 120);

  ASSERT_TRUE(dir_.Publish("queue: {enabled: true}\n"));
  bool changed = false;
  EXPECT_EQ(CheckNowLogging(changed),
            (std::vector<std::string>{
                "level=warn msg=\"policy reload failed; keeping the last good policy\" file=" +
                dir_.Path() + " error=\"" + refused + "\" issues=1"}));
  EXPECT_EQ(published_.size(), 1u);
  EXPECT_EQ(source_->loaded()->text, "queue: {enabled: false, timeout: 2m}\n");
  EXPECT_EQ(metrics_.Value(Counter::kPolicyReloadFailures), 1u);
}

}  // namespace
}  // namespace gpuadmit
