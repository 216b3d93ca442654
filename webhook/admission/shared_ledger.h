// SharedLedger: the reservation ledger every request thread reads and commits to, behind one
// reader-writer lock, with time from the Clock seam. Reservations are kept per caller scope: the
// ledger itself is the scope "" (every caller the apiserver's client certificate authenticated),
// and In("address X") is the scope of a caller who could not be authenticated, whose decisions
// see and make only that scope's reservations. A flood of reviews from a forger's address thus
// holds devices no real pod's decision counts. Each operation is a few map lookups, so the
// lock is held for microseconds; planning happens outside it (Review plans, then commits).
// Planning reads the ledger several times per review and commits once, so reads share the lock:
// with one mutex, the worker loops waited on each other's reads (a futex wait for about one
// request in thirteen at c=64 on two loops).
//
//   SharedLedger ledger(clock, std::chrono::seconds(30));
//   Review(body, snapshot, policy, &ledger);     // an authenticated caller's review
//   SharedLedger::Scope scope = ledger.In("address 10.0.0.9");
//   Review(body, snapshot, policy, &scope);      // another caller's
//   ledger.Release(state.TakeArrivedReservations());  // the inventory saw those pods
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
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

// 256: scopes are kept while they hold a reservation. Beyond this many, a new caller's
// reservations go to one scope shared by every such caller (still apart from "").
inline constexpr size_t kMaxReservationScopes = 256;

class SharedLedger final : public Reservations {
 public:
  SharedLedger(const Clock& clock, std::chrono::steady_clock::duration ttl)
      : clock_(clock), ttl_(ttl), ledger_(ttl) {}

  // The reservations of one caller scope, as Reservations. Holds the ledger and the name by
  // reference: a request's view, made where its caller's scope is in hand.
  class Scope final : public Reservations {
   public:
    int64_t Reserved(std::string_view node, std::string_view resource,
                     std::string_view except_key) const override;
    bool Holds(std::string_view key, std::string_view owner) const override;
    std::vector<Claim> HeldUnder(std::string_view key) const override;
    std::vector<Claim> HeldFor(std::string_view owner) const override;
    bool Commit(const std::string& key, const std::string& owner,
                const std::vector<Claim>& claims) override;

   private:
    friend class SharedLedger;
    Scope(SharedLedger& ledger, std::string_view name) : ledger_(ledger), name_(name) {}
    SharedLedger& ledger_;
    std::string_view name_;
  };
  // The scope `name` (which must outlive the view); "" is this ledger itself.
  Scope In(std::string_view name) { return Scope(*this, name); }

  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override;
  bool Holds(std::string_view key, std::string_view owner) const override;
  std::vector<Claim> HeldUnder(std::string_view key) const override;
  std::vector<Claim> HeldFor(std::string_view owner) const override;
  bool Commit(const std::string& key, const std::string& owner,
              const std::vector<Claim>& claims) override;
  // Every scope's reservations together.
  std::vector<Claim> Totals() const override;

  // Ends the reservations whose pods arrived in the inventory, in every scope.
  void Release(const std::vector<std::string>& keys);
  // Ends reservations past their TTL; returns how many (Commit also expires as it goes). A
  // scope left with none is dropped.
  size_t Expire();
  // As ReservationLedger::KeepWhileWaiting, in every scope.
  void KeepWhileWaiting(const std::set<std::string, std::less<>>& keys);
  size_t size() const;    // reservations, every scope's
  size_t scopes() const;  // scopes other than "" holding reservations

 private:
  // The scope `name`'s ledger, or null if it holds nothing. Under mu_.
  const ReservationLedger* Find(std::string_view name) const;
  // The scope `name`'s ledger, made if need be. Under mu_, held exclusively.
  ReservationLedger& Make(std::string_view name);

  const Clock& clock_;
  std::chrono::steady_clock::duration ttl_;
  mutable std::shared_mutex mu_;
  ReservationLedger ledger_;  // the scope ""
  std::map<std::string, ReservationLedger, std::less<>> scoped_;
  std::set<std::string, std::less<>> waiting_;  // KeepWhileWaiting's keys, for new scopes too
};

}  // namespace gpuadmit
