#include "webhook/kube/leader_elector.h"

#include <utility>

namespace gpuadmit {

LeaderElector::LeaderElector(LeaseLock& lock, const Clock& clock, Logger& log, Metrics& metrics,
                             LeaderElectionOptions options)
    : lock_(lock), clock_(clock), log_(log), metrics_(metrics), options_(std::move(options)) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  metrics_.SetLeader(false);
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    bool held = TryAcquireOrRenew();
    auto now = clock_.Now();
    lock.lock();
    if (held) {
      last_renew_ = now;
      if (!leading_.load()) {
        lock.unlock();
        SetLeading(true);
        lock.lock();
      }
    } else if (leading_.load() && now - last_renew_ >= options_.renew_deadline) {
      lock.unlock();
      log_.Warn("leader election: could not renew the lease within the renew deadline",
                {{"lease", lock_.ns() + "/" + lock_.name()}});
      SetLeading(false);
      lock.lock();
    }
    wake_.wait_for(lock, options_.retry_period, [this] { return stop_; });
  }
}

void LeaderElector::SetLeading(bool leading) {
  leading_.store(leading);
  metrics_.SetLeader(leading);
  if (leading) metrics_.Inc(Counter::kLeaderTransitions);
  log_.Info(leading ? "leader election: leading" : "leader election: following",
            {{"identity", options_.identity}, {"lease", lock_.ns() + "/" + lock_.name()}});
  if (options_.on_change) options_.on_change(leading);
}

bool LeaderElector::HeldByOther(const LeaderRecord& record,
                                std::chrono::steady_clock::time_point now) const {
  if (record.holder.empty() || record.holder == options_.identity) return false;
  return now < observed_at_ + std::chrono::seconds(record.lease_duration_s);
}

bool LeaderElector::TryAcquireOrRenew() {
  LeaderRecord mine;
  mine.holder = options_.identity;
  mine.address = options_.address;
  mine.lease_duration_s =
      static_cast<int>(std::chrono::ceil<std::chrono::seconds>(options_.lease_duration).count());
  mine.renew_time = MicroTimeNow();
  mine.acquire_time = mine.renew_time;

  auto read = lock_.Get();
  auto now = clock_.Now();
  if (!read.ok()) {
    log_.Warn("leader election: cannot read the lease", {{"error", read.error().message}});
    return false;
  }
  if (!read.value().found) {
    auto created = lock_.Create(mine);
    if (!created.ok()) {
      log_.Warn("leader election: cannot create the lease", {{"error", created.error().message}});
      return false;
    }
    if (created.value() == LeaseLock::Write::kConflict) return false;
    std::lock_guard<std::mutex> lock(mu_);
    observed_ = mine;
    observed_at_ = now;
    return true;
  }

  const LeaderRecord& theirs = read.value().record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!observed_ || !(*observed_ == theirs)) {  // it changed: the lease clock restarts here
      observed_ = theirs;
      observed_at_ = now;
    }
    if (HeldByOther(theirs, now)) return false;
  }
  if (theirs.holder == options_.identity) {
    mine.acquire_time = theirs.acquire_time;
    mine.transitions = theirs.transitions;
  } else {
    mine.transitions = theirs.transitions + 1;
  }
  // The write goes out without the lock: readers of the leader's address never wait on the API.
  auto updated = lock_.Update(mine, read.value().version);
  if (!updated.ok()) {
    log_.Warn("leader election: cannot update the lease", {{"error", updated.error().message}});
    return false;
  }
  if (updated.value() == LeaseLock::Write::kConflict) return false;
  std::lock_guard<std::mutex> lock(mu_);
  observed_ = mine;
  observed_at_ = now;
  return true;
}

std::string LeaderElector::LeaderAddress() const {
  if (leading_.load()) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (!observed_ || !HeldByOther(*observed_, clock_.Now())) return "";
  return observed_->address;
}

std::string LeaderElector::Leader() const {
  if (leading_.load()) return options_.identity;
  std::lock_guard<std::mutex> lock(mu_);
  if (!observed_ || !HeldByOther(*observed_, clock_.Now())) return "";
  return observed_->holder;
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!leading_.load()) return;
  // Released as client-go releases: nobody holds it, and it expires a second after.
  LeaderRecord released;
  released.lease_duration_s = 1;
  released.renew_time = MicroTimeNow();
  released.acquire_time = released.renew_time;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (observed_) released.transitions = observed_->transitions;
  }
  auto read = lock_.Get();
  if (read.ok() && read.value().found && read.value().record.holder == options_.identity) {
    auto wrote = lock_.Update(released, read.value().version);
    if (wrote.ok() && wrote.value() == LeaseLock::Write::kOk) {
      log_.Info("leader election: lease released", {{"lease", lock_.ns() + "/" + lock_.name()}});
    } else {
      log_.Warn("leader election: could not release the lease",
                {{"error", wrote.ok() ? "conflict" : wrote.error().message}});
    }
  }
  leading_.store(false);
  metrics_.SetLeader(false);
}

}  // namespace gpuadmit
