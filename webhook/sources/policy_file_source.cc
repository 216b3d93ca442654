#include "webhook/sources/policy_file_source.h"

#include <algorithm>

#include "webhook/sources/config_files.h"

namespace gpuadmit {

PolicyFileSource::PolicyFileSource(std::string path, Publish publish, Metrics& metrics, Logger& log,
                                   std::chrono::milliseconds interval)
    : path_(std::move(path)),
      publish_(std::move(publish)),
      metrics_(metrics),
      log_(log),
      reloader_(path_, interval, [this] { Load(/*initial=*/false); }) {}

bool PolicyFileSource::Load(bool initial) {
  std::string text;
  auto policy = LoadPolicyFile(path_, &text);
  if (policy.ok() && servable_) {
    if (std::string why = servable_(policy.value()); !why.empty())
      policy = Error{path_ + ": " + why};
  }
  if (!policy.ok()) {
    error_ = policy.error().message;
    if (!initial) {
      metrics_.Inc(Counter::kPolicyReloadFailures);
      std::string first = error_.substr(0, error_.find('\n'));
      size_t count = static_cast<size_t>(std::count(error_.begin(), error_.end(), '\n')) + 1;
      log_.Warn("policy reload failed; keeping the last good policy",
                {{"file", path_}, {"error", first}, {"issues", std::to_string(count)}});
    }
    return false;
  }
  error_.clear();
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  loaded_.store(std::make_shared<const Loaded>(Loaded{path_, std::move(text), now_ms}));
  publish_(std::make_shared<const Policy>(std::move(policy).value()));
  if (!initial) metrics_.Inc(Counter::kPolicyReloads);
  log_.Info(initial ? "policy loaded" : "policy reloaded", {{"file", path_}});
  return true;
}

void PolicyFileSource::Start() { reloader_.Start(); }

bool PolicyFileSource::CheckNow() { return reloader_.CheckNow(); }

}  // namespace gpuadmit
