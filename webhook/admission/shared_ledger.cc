#include "webhook/admission/shared_ledger.h"

#include <mutex>
#include <shared_mutex>

namespace gpuadmit {
namespace {

// Where the callers beyond kMaxReservationScopes reserve.
constexpr std::string_view kOverflowScope = "address (others)";

}  // namespace

const ReservationLedger* SharedLedger::Find(std::string_view name) const {
  if (name.empty()) return &ledger_;
  auto it = scoped_.find(name);
  if (it == scoped_.end() && scoped_.size() >= kMaxReservationScopes) {
    it = scoped_.find(kOverflowScope);
  }
  return it == scoped_.end() ? nullptr : &it->second;
}

ReservationLedger& SharedLedger::Make(std::string_view name) {
  if (name.empty()) return ledger_;
  if (auto it = scoped_.find(name); it != scoped_.end()) return it->second;
  if (scoped_.size() >= kMaxReservationScopes) name = kOverflowScope;
  auto [it, made] = scoped_.try_emplace(std::string(name), ttl_);
  if (made) it->second.KeepWhileWaiting(waiting_);
  return it->second;
}

int64_t SharedLedger::Reserved(std::string_view node, std::string_view resource,
                               std::string_view except_key) const {
  std::shared_lock lock(mu_);
  return ledger_.Reserved(node, resource, except_key);
}

bool SharedLedger::Holds(std::string_view key, std::string_view owner) const {
  std::shared_lock lock(mu_);
  return ledger_.Holds(key, owner);
}

std::vector<Claim> SharedLedger::HeldUnder(std::string_view key) const {
  std::shared_lock lock(mu_);
  return ledger_.HeldUnder(key);
}

std::vector<Claim> SharedLedger::HeldFor(std::string_view owner) const {
  std::shared_lock lock(mu_);
  return ledger_.HeldFor(owner);
}

bool SharedLedger::Commit(const std::string& key, const std::string& owner,
                          const std::vector<Claim>& claims) {
  std::lock_guard lock(mu_);
  return ledger_.Commit(key, owner, claims, clock_.Now());
}

int64_t SharedLedger::Scope::Reserved(std::string_view node, std::string_view resource,
                                      std::string_view except_key) const {
  std::shared_lock lock(ledger_.mu_);
  const ReservationLedger* scope = ledger_.Find(name_);
  return scope == nullptr ? 0 : scope->Reserved(node, resource, except_key);
}

bool SharedLedger::Scope::Holds(std::string_view key, std::string_view owner) const {
  std::shared_lock lock(ledger_.mu_);
  const ReservationLedger* scope = ledger_.Find(name_);
  return scope != nullptr && scope->Holds(key, owner);
}

std::vector<Claim> SharedLedger::Scope::HeldUnder(std::string_view key) const {
  std::shared_lock lock(ledger_.mu_);
  const ReservationLedger* scope = ledger_.Find(name_);
  return scope != nullptr ? scope->HeldUnder(key) : std::vector<Claim>{};
}

std::vector<Claim> SharedLedger::Scope::HeldFor(std::string_view owner) const {
  std::shared_lock lock(ledger_.mu_);
  const ReservationLedger* scope = ledger_.Find(name_);
  return scope != nullptr ? scope->HeldFor(owner) : std::vector<Claim>{};
}

bool SharedLedger::Scope::Commit(const std::string& key, const std::string& owner,
                                 const std::vector<Claim>& claims) {
  std::lock_guard lock(ledger_.mu_);
  return ledger_.Make(name_).Commit(key, owner, claims, ledger_.clock_.Now());
}

std::vector<Claim> SharedLedger::Totals() const {
  std::shared_lock lock(mu_);
  std::vector<Claim> out = ledger_.Totals();
  if (scoped_.empty()) return out;
  std::map<std::pair<std::string, std::string>, int64_t> sum;
  for (const Claim& c : out) sum[{c.node, c.resource}] += c.count;
  for (const auto& [name, scope] : scoped_) {
    for (const Claim& c : scope.Totals()) sum[{c.node, c.resource}] += c.count;
  }
  out.clear();
  for (const auto& [key, count] : sum) out.push_back({key.first, key.second, count, 0});
  return out;
}

void SharedLedger::Release(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) {
    ledger_.Release(key);
    for (auto& [name, scope] : scoped_) scope.Release(key);
  }
}

void SharedLedger::KeepWhileWaiting(const std::set<std::string, std::less<>>& keys) {
  std::lock_guard lock(mu_);
  waiting_ = keys;
  ledger_.KeepWhileWaiting(keys);
  for (auto& [name, scope] : scoped_) scope.KeepWhileWaiting(keys);
}

size_t SharedLedger::Expire() {
  std::lock_guard lock(mu_);
  auto now = clock_.Now();
  size_t ended = ledger_.Expire(now);
  for (auto it = scoped_.begin(); it != scoped_.end();) {
    ended += it->second.Expire(now);
    it = it->second.size() == 0 ? scoped_.erase(it) : std::next(it);
  }
  return ended;
}

size_t SharedLedger::size() const {
  std::shared_lock lock(mu_);
  size_t n = ledger_.size();
  for (const auto& [name, scope] : scoped_) n += scope.size();
  return n;
}

size_t SharedLedger::scopes() const {
  std::shared_lock lock(mu_);
  return scoped_.size();
}

}  // namespace gpuadmit
