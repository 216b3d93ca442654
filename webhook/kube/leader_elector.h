// LeaderElector: one leader among the replicas, on a Lease (LeaseLock), with client-go's
// leaderelection semantics:
//   - every retry period (2 s) each replica reads the Lease; a record held by another identity
//     counts as held until lease duration (15 s) has passed since this replica last saw it
//     change (its own clock, not the holder's timestamps);
//   - a free or expired Lease is taken, and the leader renews every retry period, by an update
//     conditional on the resourceVersion it read (409: someone else wrote first, try again);
//   - a leader that cannot renew for renew deadline (10 s) stops leading;
//   - Stop() releases a held Lease (holder emptied, duration 1 s), so the next replica takes
//     over at its next retry instead of waiting out the lease.
// The leader's address is published on the Lease (LeaderRecord::address), so the followers
// know where to forward.
//
//   LeaderElector elector(lock, clock, log, metrics, options);
//   elector.Start();
//   if (!elector.IsLeader()) ... forward to elector.LeaderAddress() ...
//   elector.Stop();
//
// Thread safety: Start and Stop from one thread; IsLeader, LeaderAddress and Leader from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "webhook/kube/lease_lock.h"
#include "webhook/os/clock.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

struct LeaderElectionOptions {
  std::string identity;  // this replica: --id, the pod name by default
  std::string address;   // where the others reach it: --advertise HOST:PORT
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  // Called on the elector's thread when this replica starts or stops leading.
  std::function<void(bool leading)> on_change;
};

class LeaderElector {
 public:
  LeaderElector(LeaseLock& lock, const Clock& clock, Logger& log, Metrics& metrics,
                LeaderElectionOptions options);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  // Ends the loop; a held Lease is released first. Idempotent.
  void Stop();

  // One read-and-write step of the loop: true when this replica holds the Lease after it.
  // Start's thread calls it every retry period; tests call it directly.
  bool TryAcquireOrRenew();

  bool IsLeader() const { return leading_.load(); }
  // The address the current leader published, while its Lease is live as this replica sees it;
  // empty when no leader is known (none, released, expired) or this replica leads.
  std::string LeaderAddress() const;
  // The current leader's identity, empty when none is known.
  std::string Leader() const;

 private:
  void Run();
  void SetLeading(bool leading);
  bool HeldByOther(const LeaderRecord& record, std::chrono::steady_clock::time_point now) const;

  LeaseLock& lock_;
  const Clock& clock_;
  Logger& log_;
  Metrics& metrics_;
  LeaderElectionOptions options_;

  std::atomic<bool> leading_{false};
  mutable std::mutex mu_;  // guards what follows
  std::optional<LeaderRecord> observed_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::chrono::steady_clock::time_point last_renew_{};
  bool stop_ = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace gpuadmit
