// Logger: one line per event on stderr, logfmt style, so `kubectl logs` reads well and log
// pipelines can split fields:
//   2026-11-21T14:00:00.123Z level=info msg="review" uid=... outcome=patch
//
//   Logger log(LogLevel::kInfo);
//   log.Info("policy reloaded", {{"file", path}});
//
// Thread safety: every method may be called from any thread; a line is written whole.
#pragma once

#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace gpuadmit {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Parses "debug", "info", "warn" or "error"; false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel& out);

class Logger {
 public:
  using Fields = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  explicit Logger(LogLevel level = LogLevel::kInfo) : level_(level) {}

  bool Enabled(LogLevel level) const { return level >= level_; }
  void Log(LogLevel level, std::string_view message, Fields fields = {});
  void Debug(std::string_view m, Fields f = {}) { Log(LogLevel::kDebug, m, f); }
  void Info(std::string_view m, Fields f = {}) { Log(LogLevel::kInfo, m, f); }
  void Warn(std::string_view m, Fields f = {}) { Log(LogLevel::kWarn, m, f); }
  void Error(std::string_view m, Fields f = {}) { Log(LogLevel::kError, m, f); }

 private:
  LogLevel level_;
  std::mutex mu_;  // one line at a time
};

}  // namespace gpuadmit
