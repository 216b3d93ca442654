#include "core/inventory/reservation_ledger.h"

#include <algorithm>
#include <numeric>

namespace gpuadmit {

void ReservationLedger::Count(const Entry& entry, int sign) {
  for (const Claim& c : entry.claims) {
    auto it = totals_.find(std::pair<std::string_view, std::string_view>(c.node, c.resource));
    if (it == totals_.end()) it = totals_.emplace(std::make_pair(c.node, c.resource), 0).first;
    it->second += sign * c.count;
    if (it->second == 0) totals_.erase(it);
  }
}

int64_t ReservationLedger::Reserved(std::string_view node, std::string_view resource,
                                    std::string_view except_key) const {
  auto it = totals_.find(std::pair<std::string_view, std::string_view>(node, resource));
  int64_t total = it == totals_.end() ? 0 : it->second;
  if (!except_key.empty()) {
    if (auto own = entries_.find(except_key); own != entries_.end()) {
      const std::vector<Claim>& claims = own->second.claims;
      total -= std::accumulate(
          claims.begin(), claims.end(), int64_t{0}, [&](int64_t sum, const Claim& c) {
            return c.node == node && c.resource == resource ? sum + c.count : sum;
          });
    }
  }
  return total;
}

std::vector<Claim> ReservationLedger::Totals() const {
  std::vector<Claim> out;
  out.reserve(totals_.size());
  for (const auto& [key, count] : totals_) out.push_back({key.first, key.second, count, 0});
  return out;
}

std::vector<Claim> ReservationLedger::HeldUnder(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? std::vector<Claim>{} : it->second.claims;
}

std::vector<Claim> ReservationLedger::HeldFor(std::string_view owner) const {
  const Entry* newest = nullptr;
  for (const auto& [key, entry] : entries_) {
    if (entry.owner == owner && (newest == nullptr || entry.expires > newest->expires)) {
      newest = &entry;
    }
  }
  return newest == nullptr ? std::vector<Claim>{} : newest->claims;
}

bool ReservationLedger::Holds(std::string_view key, std::string_view owner) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.owner == owner;
}

bool ReservationLedger::Commit(const std::string& key, const std::string& owner,
                               const std::vector<Claim>& claims, TimePoint now) {
  Expire(now);
  bool fits = std::all_of(claims.begin(), claims.end(), [&](const Claim& c) {
    return Reserved(c.node, c.resource, key) + c.count <= c.free;
  });
  if (!fits) return false;
  auto it = entries_.find(key);
  if (claims.empty()) {
    if (it != entries_.end()) Erase(it);
    return true;
  }
  Entry entry{owner, claims, now + ttl_};
  // The new claims are counted before the old ones leave, and the entry is replaced in place: a
  // key that claims again what it held (a reinvocation) keeps its totals and its map node rather
  // than having them erased at zero and made again.
  Count(entry, +1);
  if (it == entries_.end()) {
    it = entries_.emplace(key, std::move(entry)).first;
    by_expiry_.emplace(it->second.expires, it->first);
  } else {
    Count(it->second, -1);
    auto when = by_expiry_.extract({it->second.expires, it->first});
    it->second = std::move(entry);
    when.value().first = it->second.expires;
    by_expiry_.insert(std::move(when));
  }
  return true;
}

void ReservationLedger::Erase(Entries::iterator it) {
  Count(it->second, -1);
  by_expiry_.erase({it->second.expires, it->first});
  entries_.erase(it);
}

void ReservationLedger::Release(std::string_view key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) Erase(it);
}

size_t ReservationLedger::Expire(TimePoint now) {
  size_t expired = 0;
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    auto it = entries_.find(by_expiry_.begin()->second);
    if (waiting_.contains(it->first)) {
      auto when = by_expiry_.extract(by_expiry_.begin());
      it->second.expires = now + ttl_;  // later than now: the loop moves on
      when.value().first = it->second.expires;
      by_expiry_.insert(std::move(when));
      continue;
    }
    Erase(it);
    ++expired;
  }
  return expired;
}

}  // namespace gpuadmit
