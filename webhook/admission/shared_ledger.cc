#include "webhook/admission/shared_ledger.h"

#include <mutex>
#include <shared_mutex>

namespace gpuadmit {

int64_t SharedLedger::Reserved(std::string_view node, std::string_view resource,
                               std::string_view except_key) const {
  std::shared_lock lock(mu_);
  return ledger_.Reserved(node, resource, except_key);
}

std::vector<Claim> SharedLedger::Totals() const {
  std::shared_lock lock(mu_);
  return ledger_.Totals();
}

bool SharedLedger::Holds(std::string_view key, std::string_view owner) const {
  std::shared_lock lock(mu_);
  return ledger_.Holds(key, owner);
}

bool SharedLedger::Commit(const std::string& key, const std::string& owner,
                          const std::vector<Claim>& claims) {
  std::lock_guard lock(mu_);
  return ledger_.Commit(key, owner, claims, clock_.Now());
}

void SharedLedger::Release(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) ledger_.Release(key);
}

size_t SharedLedger::Expire() {
  std::lock_guard lock(mu_);
  return ledger_.Expire(clock_.Now());
}

size_t SharedLedger::size() const {
  std::shared_lock lock(mu_);
  return ledger_.size();
}

}  // namespace gpuadmit
