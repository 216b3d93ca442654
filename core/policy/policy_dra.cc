// The dra section of the policy: how claims for DRA devices are written.
//
//   dra:
//     firstAvailable: true    # MIG fallbacks as a prioritized list; false: chosen at admission
//     alignPcieRoot: false    # multi-GPU claims kept under one PCIe root
//     steerClaims: true       # a claim made for one pod pinned to the GPU that strands least
#include "core/policy/policy_sections.h"

namespace gpuadmit {

void ReadDra(const YAML::Node& node, const std::string& path, PolicyValidator& v, DraPolicy& out) {
  v.Map(node, path,
        {{"firstAvailable",
          [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.first_available); }},
         {"alignPcieRoot",
          [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.align_pcie_root); }},
         {"steerClaims", [&](const YAML::Node& n, const std::string& p) {
            v.Bool(n, p, out.steer_claims);
          }}});
}

}  // namespace gpuadmit
