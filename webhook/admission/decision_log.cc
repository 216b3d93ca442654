#include "webhook/admission/decision_log.h"

#include <algorithm>
#include <utility>

namespace gpuadmit {
namespace {

constexpr int64_t kMillisPerMinute = 60'000;

int64_t MinuteOf(int64_t unix_ms) {
  return unix_ms >= 0 ? unix_ms / kMillisPerMinute
                      : (unix_ms - kMillisPerMinute + 1) / kMillisPerMinute;
}

}  // namespace

std::string_view ReviewOutcomeName(ReviewOutcome outcome) {
  switch (outcome) {
    case ReviewOutcome::kAllowed:
      return "allowed";
    case ReviewOutcome::kPatched:
      return "patched";
    case ReviewOutcome::kDenied:
      return "denied";
    case ReviewOutcome::kFailOpen:
      return "fail-open";
    case ReviewOutcome::kFailClosed:
      return "fail-closed";
    case ReviewOutcome::kCount:
      break;
  }
  return "";
}

DecisionLog::DecisionLog(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

void DecisionLog::Record(DecisionRecord record) {
  int64_t minute = MinuteOf(record.at_unix_ms);
  size_t outcome = static_cast<size_t>(record.outcome);
  std::lock_guard lock(mutex_);
  ring_[next_] = std::move(record);
  next_ = (next_ + 1) % ring_.size();
  size_ = std::min(size_ + 1, ring_.size());
  Minute& slot =
      minutes_[static_cast<size_t>(minute % kWindowMinutes + kWindowMinutes) % kWindowMinutes];
  if (slot.index != minute) slot = Minute{minute, {}};
  if (outcome < kReviewOutcomes) ++slot.counts[outcome];
}

std::vector<DecisionRecord> DecisionLog::Recent() const {
  std::lock_guard lock(mutex_);
  std::vector<DecisionRecord> recent;
  recent.reserve(size_);
  for (size_t i = 0; i < size_; ++i) {
    recent.push_back(ring_[(next_ + ring_.size() - 1 - i) % ring_.size()]);
  }
  return recent;
}

OutcomeCounts DecisionLog::Outcomes(int64_t now_unix_ms) const {
  int64_t now = MinuteOf(now_unix_ms);
  OutcomeCounts total{};
  std::lock_guard lock(mutex_);
  for (const Minute& m : minutes_) {
    if (m.index < 0 || m.index > now || m.index <= now - kWindowMinutes) continue;
    for (size_t i = 0; i < kReviewOutcomes; ++i) total[i] += m.counts[i];
  }
  return total;
}

}  // namespace gpuadmit
