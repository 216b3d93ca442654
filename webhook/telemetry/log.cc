#include "webhook/telemetry/log.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/text/plain_run.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kLevelNames[] = {"debug", "info", "warn", "error"};

// What a byte asks of a value, as bits: quotes around the value (space, '=', '"', control
// characters), and an escape inside them ('"', '\\', control characters). A backslash alone
// leaves a value bare.
constexpr unsigned char kNeedsQuotes = 1;
constexpr unsigned char kNeedsEscape = 2;

constexpr std::array<unsigned char, 256> kByteNeeds = [] {
  std::array<unsigned char, 256> needs{};
  for (int c = 0; c < 0x20; ++c) needs[c] = kNeedsQuotes | kNeedsEscape;
  needs[' '] = needs['='] = kNeedsQuotes;
  needs['"'] = kNeedsQuotes | kNeedsEscape;
  needs['\\'] = kNeedsEscape;
  return needs;
}();

bool Needs(char c, unsigned char need) {
  return (kByteNeeds[static_cast<unsigned char>(c)] & need) != 0;
}

// Quotes a value when it holds spaces, quotes, '=' or control characters. Runs of plain bytes
// are copied whole: a review's trail is a few hundred of them.
void AppendValue(std::string& line, std::string_view value) {
  bool quoted = value.empty() || std::any_of(value.begin(), value.end(),
                                             [](char c) { return Needs(c, kNeedsQuotes); });
  if (!quoted) {
    line += value;
    return;
  }
  line += '"';
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = PlainRun(value); i < value.size(); i += 1 + PlainRun(value.substr(i + 1))) {
    char c = value[i];
    if (!Needs(c, kNeedsEscape)) continue;  // 0x80 and up
    line.append(value, run, i - run);
    run = i + 1;
    if (c == '\n') {
      line += "\\n";
    } else if (c == '"' || c == '\\') {
      line += '\\';
      line += c;
    } else {
      line += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
  }
  line.append(value, run);
  line += '"';
}

}  // namespace

void AppendLogTimestamp(std::string& out, std::chrono::system_clock::time_point t) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  seconds second = std::chrono::floor<seconds>(t.time_since_epoch());
  auto millis = std::chrono::duration_cast<milliseconds>(t.time_since_epoch() - second).count();
  std::time_t whole = second.count();
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char second_text[std::size("2026-11-21T14:00:00")];
  std::strftime(second_text, sizeof second_text, "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[] = {'.', static_cast<char>('0' + millis / 100),
                     static_cast<char>('0' + millis / 10 % 10),
                     static_cast<char>('0' + millis % 10), 'Z'};
  out.append(second_text, std::size(second_text) - 1);
  out.append(fraction, std::size(fraction));
}

bool ParseLogLevel(std::string_view text, LogLevel& out) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i) {
    if (kLevelNames[i] == text) {
      out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

Logger::Logger(LogLevel level, std::chrono::milliseconds hold, const Clock& clock)
    : level_(level), hold_(hold), clock_(clock) {
  if (hold_.count() == 0) return;
  // Reserved, not touched: the pages become memory as lines fill them. A batch's size follows
  // the traffic; growing a buffer to it would copy the lines already held, and make the code a
  // review runs depend on how the batches fell (which the layout's training must not).
  held_.reserve(kHeldCapacity);
  spare_.reserve(kHeldCapacity);
}

void Logger::Log(LogLevel level, std::string_view message, Fields fields) {
  if (!Enabled(level)) return;
  std::string line;
  line.reserve(96 + message.size());
  AppendLogTimestamp(line, std::chrono::system_clock::now());
  line += " level=";
  line += kLevelNames[static_cast<int>(level)];
  line += " msg=";
  AppendValue(line, message);
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    AppendValue(line, value);
  }
  line += '\n';
  std::unique_lock<std::mutex> lock(mu_);
  if (hold_.count() == 0) {
    std::fwrite(line.data(), 1, line.size(), stderr);
    return;
  }
  // A writer stuck on a slow stderr (a pipe nobody drains): past kMaxHeldWhileWriting, loggers
  // wait for it, as every logger waited on the lock before writes left it; memory stays bounded.
  written_.wait(lock, [this] { return !writing_ || held_.size() < kMaxHeldWhileWriting; });
  auto now = clock_.Now();
  if (held_.empty()) oldest_ = now;
  held_ += line;
  if (level >= LogLevel::kWarn || held_.size() >= kMaxHeld || now - oldest_ >= hold_) {
    WriteHeld(lock);
  }
}

void Logger::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  written_.wait(lock, [this] { return !writing_; });
  WriteHeld(lock);
}

void Logger::WriteHeld(std::unique_lock<std::mutex>& lock) {
  if (writing_) return;  // that writer takes these lines after its batch, in their order
  writing_ = true;
  while (!held_.empty()) {
    std::string batch;
    batch.swap(held_);
    held_.swap(spare_);     // an emptied buffer that kept its capacity, if there is one
    written_.notify_all();  // room again for loggers waiting on a full buffer
    lock.unlock();
    std::fwrite(batch.data(), 1, batch.size(), stderr);  // stderr is unbuffered: one write
    batch.clear();
    lock.lock();
    if (spare_.capacity() < batch.capacity() && batch.capacity() <= 2 * kMaxHeld) {
      spare_.swap(batch);
    }
  }
  writing_ = false;
  written_.notify_all();
}

}  // namespace gpuadmit
