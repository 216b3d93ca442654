// Logger: one line per event on stderr, logfmt style, so `kubectl logs` reads well and log
// pipelines can split fields:
//   2026-11-21T14:00:00.123Z level=info msg="review" uid=... outcome=patch
//
//   Logger log(LogLevel::kInfo);
//   log.Info("policy reloaded", {{"file", path}});
//
// With a hold time (what `serve` uses: 100 ms), debug and info lines wait in memory and go out
// together, in one write, when the oldest has waited that long, when 256 KiB are waiting, before
// a warning or an error (written at once, after them), at Flush() and at destruction: a review
// logged per request then costs no system call of its own. `serve` flushes every half hold from
// its main thread, so the event loops that log reviews do not write under normal load. The write
// happens outside the lock that logging takes: a thread logging while another writes (to a slow
// pipe, say) appends and goes on, and the writer writes its line too; past 1 MiB waiting, it
// waits for the writer. Without a hold time, every
// line is written as it comes.
//
// Thread safety: every method may be called from any thread; a line is written whole, and lines
// are written in the order they were logged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "webhook/os/clock.h"

namespace gpuadmit {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Parses "debug", "info", "warn" or "error"; false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel& out);

// Appends `t` as a line starts, in UTC to the millisecond: "2026-11-21T14:00:00.123Z".
void AppendLogTimestamp(std::string& out, std::chrono::system_clock::time_point t);

class Logger {
 public:
  using Fields = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  // `clock` measures how long held lines have waited (tests give a fake one).
  explicit Logger(LogLevel level = LogLevel::kInfo,
                  std::chrono::milliseconds hold = std::chrono::milliseconds(0),
                  const Clock& clock = DefaultSteadyClock());
  ~Logger() { Flush(); }
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool Enabled(LogLevel level) const { return level >= level_; }
  void Log(LogLevel level, std::string_view message, Fields fields = {});
  void Debug(std::string_view m, Fields f = {}) { Log(LogLevel::kDebug, m, f); }
  void Info(std::string_view m, Fields f = {}) { Log(LogLevel::kInfo, m, f); }
  void Warn(std::string_view m, Fields f = {}) { Log(LogLevel::kWarn, m, f); }
  void Error(std::string_view m, Fields f = {}) { Log(LogLevel::kError, m, f); }

  // Writes the lines waiting, if any; when another thread is writing, waits for it first, so
  // that every line logged before the call is written when it returns.
  void Flush();

 private:
  // Bytes that may wait before they are written.
  static constexpr size_t kMaxHeld = 256 * 1024;
  // Bytes that may wait while a batch is being written, before a logger waits for the writer.
  static constexpr size_t kMaxHeldWhileWriting = 4 * kMaxHeld;
  // What each of the two buffers is given at the start: kMaxHeld and room for the line that
  // crosses it, so that a batch is never copied into a larger buffer as it grows.
  static constexpr size_t kHeldCapacity = kMaxHeld + 64 * 1024;

  // Writes what is held, and what is logged meanwhile, until nothing is; returns at once when
  // another thread is writing (it takes what this one held). `lock` holds mu_, and holds it
  // again on return.
  void WriteHeld(std::unique_lock<std::mutex>& lock);

  LogLevel level_;
  std::chrono::milliseconds hold_;
  const Clock& clock_;
  std::mutex mu_;                                 // held_, writing_, spare_
  std::condition_variable written_;               // writing_ went false, or a batch was taken
  bool writing_ = false;                          // a thread is writing a batch
  std::string held_;                              // lines waiting, whole
  std::string spare_;                             // a written batch's buffer, for reuse
  std::chrono::steady_clock::time_point oldest_;  // when the first of them was logged
};

}  // namespace gpuadmit
