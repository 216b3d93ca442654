// MIG profiles as the NVIDIA device plugin names its resources under the mixed strategy:
// nvidia.com/mig-<slices>g.<memory>gb, optionally with a "+me" (media extensions) suffix.
//
//   auto p = ParseMigResource("nvidia.com/mig-2g.20gb");  // {slices 2, memory 20, "2g.20gb"}
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuadmit {

inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

struct MigProfile {
  int slices = 0;     // compute slices ("g")
  int memory_gb = 0;  // framebuffer in GB
  std::string name;   // "2g.20gb", "1g.10gb+me"

  // Smaller means less memory, then fewer slices: the order fallback walks down.
  bool SmallerThan(const MigProfile& other) const;
};

// Parses a resource name; nullopt when it is not a MIG resource.
std::optional<MigProfile> ParseMigResource(std::string_view resource);

std::string MigResourceName(const MigProfile& profile);

}  // namespace gpuadmit
