// DecisionLog: what the status page shows of the reviews this replica answered: the last 200 in
// full (object, what it asked, fallback, sharing mode, node, warnings, trail), and how many of
// each outcome per minute over the last 15 minutes.
//
//   DecisionLog log;
//   log.Record(RecordOf(answer, failure_mode, now_ms));  // AdmissionHandler, after each review
//   for (const DecisionRecord& r : log.Recent()) ...     // newest first
//   OutcomeCounts last_15_min = log.Outcomes(now_ms);
//
// Thread safety: every method may be called from any thread; one mutex, held to move a record
// into its slot or to copy the log out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gpuadmit {

// How a review ended, as the status page counts it. kFailOpen and kFailClosed: gpuadmit could
// not decide, and the policy's failure mode answered.
enum class ReviewOutcome : uint8_t { kAllowed, kPatched, kDenied, kFailOpen, kFailClosed, kCount };
inline constexpr size_t kReviewOutcomes = static_cast<size_t>(ReviewOutcome::kCount);
std::string_view ReviewOutcomeName(ReviewOutcome outcome);  // "allowed", ..., "fail-closed"

struct DecisionRecord {
  int64_t at_unix_ms = 0;
  std::string uid;
  std::string object;  // "Pod ml/train-0" (ReviewAnswer::summary)
  ReviewOutcome outcome = ReviewOutcome::kAllowed;
  std::string asked;         // "nvidia.com/gpu=1"; "" when it asked for no GPU
  std::string fallback;      // "2g.20gb -> 1g.10gb"; "" when none
  std::string sharing_mode;  // "mig", "mps", "time-slicing", "exclusive"; "" when not decided
  std::string node;          // placement's choice; "" when none
  std::vector<std::string> warnings;
  std::vector<std::string> trail;
};

using OutcomeCounts = std::array<uint64_t, kReviewOutcomes>;

class DecisionLog {
 public:
  static constexpr size_t kDefaultCapacity = 200;
  static constexpr int kWindowMinutes = 15;

  explicit DecisionLog(size_t capacity = kDefaultCapacity);

  // Keeps `record`, dropping the oldest beyond capacity, and counts its outcome in its minute.
  void Record(DecisionRecord record);
  // The records kept, newest first.
  std::vector<DecisionRecord> Recent() const;
  // Reviews per outcome in the kWindowMinutes minutes up to `now_unix_ms` (whole minutes: the
  // current one and the 14 before it).
  OutcomeCounts Outcomes(int64_t now_unix_ms) const;
  size_t capacity() const { return ring_.size(); }

 private:
  struct Minute {
    int64_t index = -1;  // minutes since the epoch; -1: unused
    OutcomeCounts counts{};
  };

  mutable std::mutex mutex_;
  std::vector<DecisionRecord> ring_;  // fixed size; next_ is where the next record goes
  size_t next_ = 0;
  size_t size_ = 0;
  std::array<Minute, kWindowMinutes> minutes_{};  // by minute index modulo kWindowMinutes
};

}  // namespace gpuadmit
