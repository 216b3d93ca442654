// SharedLedger: the reservation ledger every request thread reads and commits to, behind one
// reader-writer lock, with time from the Clock seam. Each operation is a few map lookups, so the
// lock is held for microseconds; planning happens outside it (Review plans, then commits).
// Planning reads the ledger several times per review and commits once, so reads share the lock:
// with one mutex, the worker loops waited on each other's reads (a futex wait for about one
// request in thirteen at c=64 on two loops).
//
//   SharedLedger ledger(clock, std::chrono::seconds(30));
//   Review(body, snapshot, policy, &ledger);
//   ledger.Release(state.TakeArrivedReservations());  // the inventory saw those pods
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/inventory/reservation_ledger.h"
#include "webhook/os/clock.h"

namespace gpuadmit {

// 30 s: long enough for the apiserver to store an admitted pod and the watch to deliver it
// (usually well under a second), short enough that a pod the apiserver then refused stops
// holding devices soon.
inline constexpr std::chrono::seconds kDefaultReservationTtl{30};

class SharedLedger final : public Reservations {
 public:
  SharedLedger(const Clock& clock, std::chrono::steady_clock::duration ttl)
      : clock_(clock), ledger_(ttl) {}

  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override;
  bool Holds(std::string_view key, std::string_view owner) const override;
  bool Commit(const std::string& key, const std::string& owner,
              const std::vector<Claim>& claims) override;
  std::vector<Claim> Totals() const override;

  // Ends the reservations whose pods arrived in the inventory.
  void Release(const std::vector<std::string>& keys);
  // Ends reservations past their TTL; returns how many (Commit also expires as it goes).
  size_t Expire();
  size_t size() const;

 private:
  const Clock& clock_;
  mutable std::shared_mutex mu_;
  ReservationLedger ledger_;
};

}  // namespace gpuadmit
