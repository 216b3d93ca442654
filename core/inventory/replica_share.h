// ReplicaShare: the Reservations a replica decides on while it cannot reach a leader. Each node's
// free devices of a resource are cut into `replicas` equal shares, and this view lets a decision
// count on one share only (floor(free / replicas)): the rest reads as reserved. Replicas that
// decide without a leader at the same moment therefore promise, together, at most what is free,
// where each deciding on the whole of it would hand the same last devices to several pods.
//
//   ReplicaShare share(ledger, snapshot, 3);     // one replica of three
//   ReviewContext context{snapshot, policy, metrics, &share, stale};
//
// Reservations made through the view are the inner ledger's own (they count everywhere it is
// read); the share bounds them, it keeps none of its own.
//
// Thread safety: as the inner Reservations; the snapshot is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"

namespace gpuadmit {

class ReplicaShare final : public Reservations {
 public:
  // `replicas` >= 1; 1 is the whole of what is free (the inner view unchanged).
  ReplicaShare(Reservations& inner, const InventorySnapshot& snapshot, int64_t replicas)
      : inner_(inner), snapshot_(snapshot), replicas_(replicas < 1 ? 1 : replicas) {}

  // The inner reservations, plus the devices of the node that are other replicas' shares.
  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override;
  bool Holds(std::string_view key, std::string_view owner) const override {
    return inner_.Holds(key, owner);
  }
  // Commits to the inner ledger, each claim bounded by this replica's share of its free devices.
  bool Commit(const std::string& key, const std::string& owner,
              const std::vector<Claim>& claims) override;
  std::vector<Claim> Totals() const override { return inner_.Totals(); }
  std::vector<Claim> HeldUnder(std::string_view key) const override {
    return inner_.HeldUnder(key);
  }
  std::vector<Claim> HeldFor(std::string_view owner) const override {
    return inner_.HeldFor(owner);
  }

  // This replica's share of `free` devices.
  int64_t Share(int64_t free) const { return free <= 0 ? 0 : free / replicas_; }

 private:
  Reservations& inner_;
  const InventorySnapshot& snapshot_;
  int64_t replicas_;
};

}  // namespace gpuadmit
