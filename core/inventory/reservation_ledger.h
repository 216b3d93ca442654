// Reservations: devices handed out by admission decisions whose pods the inventory has not seen
// yet. Decisions read free counts net of them, so concurrent admissions never hand out the same
// last device; a reservation ends when its pod appears in the inventory, or after a TTL (renewed
// while the pod waits in the inventory for its DRA claims: KeepWhileWaiting).
//
// Review plans against a Reservations view, then Commit()s the claims its plan relied on; the
// commit re-checks them atomically and fails if another decision took the devices meanwhile, and
// Review plans again. The ledger itself is pure (the time is passed in); webhook/ wraps it in a
// lock and a clock.
//
//   ReservationLedger ledger(std::chrono::seconds(30));
//   ledger.Commit("uid-1", "default/train", {{"gpu-medium", "nvidia.com/mig-2g.20gb", 1, 7}}, now);
//   ledger.Reserved("gpu-medium", "nvidia.com/mig-2g.20gb", "");  // 1
//
// Thread safety: ReservationLedger is not thread-safe; Reservations implementations used by
// Review must be.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

// A device count a plan relied on: `count` of `resource` on `node`, which its snapshot showed
// with `free` available before any reservation.
struct Claim {
  std::string node;
  std::string resource;
  int64_t count = 0;
  int64_t free = 0;

  bool operator==(const Claim&) const = default;
};

class Reservations {
 public:
  virtual ~Reservations() = default;
  // Devices of `resource` reserved on `node`, not counting those held under `except_key`.
  virtual int64_t Reserved(std::string_view node, std::string_view resource,
                           std::string_view except_key) const = 0;
  // Whether `key` is a live reservation made for `owner` ("namespace/name"). A key a user wrote
  // by hand, or copied from another pod, is not.
  virtual bool Holds(std::string_view key, std::string_view owner) const = 0;
  // Records `claims` under `key` (replacing what `key` held) if every claim still fits: reserved
  // (except under `key`) + count <= free. All or nothing. False: plan again.
  virtual bool Commit(const std::string& key, const std::string& owner,
                      const std::vector<Claim>& claims) = 0;
  // Every device reserved now, one Claim per (node, resource) with its count (`free` unused), for
  // the inventory gauges. A view that cannot list them (a test's fixed counts) returns none.
  virtual std::vector<Claim> Totals() const { return {}; }
  // The claims of the live reservation under `key`: where its pod was counted, for the DRA claim
  // made for that pod later. None from a view that keeps none.
  virtual std::vector<Claim> HeldUnder(std::string_view /*key*/) const { return {}; }
  // The claims of the newest live reservation made for `owner` ("namespace/name"): where a pod
  // was counted before the watch shows its key. None from a view that keeps none.
  virtual std::vector<Claim> HeldFor(std::string_view /*owner*/) const { return {}; }
};

class ReservationLedger {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit ReservationLedger(std::chrono::steady_clock::duration ttl) : ttl_(ttl) {}

  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const;
  bool Holds(std::string_view key, std::string_view owner) const;
  // As Reservations::Commit; the reservation lives until now + ttl.
  bool Commit(const std::string& key, const std::string& owner, const std::vector<Claim>& claims,
              TimePoint now);
  // Ends the reservation under `key` (its pod arrived). Unknown keys are ignored.
  void Release(std::string_view key);
  // Ends every reservation whose TTL has passed, but those under a key of KeepWhileWaiting's,
  // which live another TTL; returns how many ended. O(log n) for each one ended or renewed, and
  // O(1) when none is: Commit calls it each time.
  size_t Expire(TimePoint now);
  // The reservations under `keys` are made for pods that are in the inventory, unbound and not
  // found unschedulable, whose DRA claims are not allocated yet: their devices are still spoken
  // for, so their TTL is renewed until the keys are replaced (or the reservation released).
  void KeepWhileWaiting(std::set<std::string, std::less<>> keys) { waiting_ = std::move(keys); }
  size_t size() const { return entries_.size(); }
  // As Reservations::Totals: O(reserved (node, resource) pairs).
  std::vector<Claim> Totals() const;
  // As Reservations::HeldUnder.
  std::vector<Claim> HeldUnder(std::string_view key) const;
  // As Reservations::HeldFor: O(live reservations), which last until the watch shows their pods.
  std::vector<Claim> HeldFor(std::string_view owner) const;

 private:
  struct Entry {
    std::string owner;
    std::vector<Claim> claims;
    TimePoint expires;
  };

  // Orders (node, resource) keys as std::pair does, and finds one from a pair of views: a read
  // on the request path builds no strings.
  struct NodeResourceLess {
    using is_transparent = void;
    using View = std::pair<std::string_view, std::string_view>;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a.first, a.second) < View(b.first, b.second);
    }
  };

  using Entries = std::map<std::string, Entry, std::less<>>;

  void Count(const Entry& entry, int sign);
  // Removes the entry at `it` from entries_, by_expiry_ and totals_.
  void Erase(Entries::iterator it);

  std::chrono::steady_clock::duration ttl_;
  Entries entries_;
  // Every entry's (expires, key), soonest first; the key views the entries_ node's own key, which
  // stays put while the entry lives.
  std::set<std::pair<TimePoint, std::string_view>> by_expiry_;
  // (node, resource) -> devices reserved, for O(log n) reads on the request path.
  std::map<std::pair<std::string, std::string>, int64_t, NodeResourceLess> totals_;
  std::set<std::string, std::less<>> waiting_;  // KeepWhileWaiting's keys
};

// A ReservationLedger seen as the Reservations a plan consults, for single-threaded users:
// simulate's replay, which moves `*now` along, and core tests, which commit at time zero (no
// `now`). serve's SharedLedger (webhook/admission) adds the lock and the clock instead.
class LedgerReservations final : public Reservations {
 public:
  explicit LedgerReservations(ReservationLedger& ledger,
                              const ReservationLedger::TimePoint* now = nullptr)
      : ledger_(ledger), now_(now) {}
  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override {
    return ledger_.Reserved(node, resource, except_key);
  }
  bool Holds(std::string_view key, std::string_view owner) const override {
    return ledger_.Holds(key, owner);
  }
  std::vector<Claim> HeldUnder(std::string_view key) const override {
    return ledger_.HeldUnder(key);
  }
  std::vector<Claim> HeldFor(std::string_view owner) const override {
    return ledger_.HeldFor(owner);
  }
  bool Commit(const std::string& key, const std::string& owner,
              const std::vector<Claim>& claims) override {
    return ledger_.Commit(key, owner, claims,
                          now_ != nullptr ? *now_ : ReservationLedger::TimePoint{});
  }
  std::vector<Claim> Totals() const override { return ledger_.Totals(); }

 private:
  ReservationLedger& ledger_;
  const ReservationLedger::TimePoint* now_;
};

}  // namespace gpuadmit
