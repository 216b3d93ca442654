#include "core/kube/mig_resource.h"

#include <charconv>
#include <tuple>

namespace gpuadmit {
namespace {

bool TakeNumber(std::string_view& s, int& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data() || out <= 0) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

bool TakeLiteral(std::string_view& s, std::string_view literal) {
  if (!s.starts_with(literal)) return false;
  s.remove_prefix(literal.size());
  return true;
}

}  // namespace

bool MigProfile::SmallerThan(const MigProfile& other) const {
  return std::tie(memory_gb, slices, name) < std::tie(other.memory_gb, other.slices, other.name);
}

std::optional<MigProfile> ParseMigResource(std::string_view resource) {
  if (!resource.starts_with(kMigResourcePrefix)) return std::nullopt;
  std::string_view s = resource.substr(kMigResourcePrefix.size());
  MigProfile p;
  p.name = std::string(s);
  if (!TakeNumber(s, p.slices) || !TakeLiteral(s, "g.") || !TakeNumber(s, p.memory_gb) ||
      !TakeLiteral(s, "gb")) {
    return std::nullopt;
  }
  if (!s.empty() && s != "+me") return std::nullopt;
  return p;
}

std::string MigResourceName(const MigProfile& profile) {
  return std::string(kMigResourcePrefix) + profile.name;
}

}  // namespace gpuadmit
