// The MIG catalog: which MIG profiles each GPU product has (NVIDIA's documented geometries), the
// policy's custom products on top, and the orders the fallback walks them in.
//
//   MigCatalog catalog(policy.mig);
//   const MigProductSpec* h100 = catalog.ProductFor("NVIDIA-H100-80GB-HBM3", 81559);
//   catalog.Chain(*h100, "2g.20gb");              // {"1g.20gb", "1g.10gb"}
//   SmallestFitting(*h100, 15 * 1024);            // "1g.20gb"
//
// Profile memory is nominal: a profile name's "<M>gb" is read as M GiB, so "1g.10gb" has 10240
// MiB (the device itself reports 9984). A pod's "10Gi" fits a 1g.10gb, as its name promises.
//
// Product matching (the GFD label nvidia.com/gpu.product, e.g. "NVIDIA-A100-SXM4-40GB"):
//   1. a policy product whose name equals the label, ignoring case and a "-MIG-<profile>" suffix
//      (GFD's single strategy appends it);
//   2. a built-in by family token (A30, A100, H100, H200, B200; "GH200" is not "H200"), then:
//      a variant token (H100 "NVL") picks the variant; a size token ("80GB") picks the entry of
//      that size; without one, the node's nvidia.com/gpu.memory picks the entry within 10% of it;
//      without either, the family's first entry (a bare "A100" is the 40 GB one). A known memory
//      that is more than 10% off the entry's matches nothing (the demo cluster's simulated 70 GB
//      H200 is not the 141 GB one). Under a "-MIG-" suffix GFD's memory label is the slice's, so
//      it is not used.
//   No match: the product is unknown to the catalog and the fallback uses the profiles that nodes
//   of that product offer in the inventory.
//
// Thread safety: pure functions; the built-in table is an immutable constant; a MigCatalog is a
// read-only view of a MigPolicy that must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/policy.h"

namespace gpuadmit {

// The built-in products, named "A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB",
// "H100-NVL-94GB", "H200-141GB", "B200-180GB"; each profile with its instances per GPU.
const std::vector<MigProductSpec>& BuiltinMigProducts();

// The nominal memory of a profile name ("2g.20gb" -> 20480 MiB, "1g.10gb+me" -> 10240); 0 when
// `profile` is not a profile name.
int64_t MigProfileMemoryMib(std::string_view profile);

// A product's largest profile's nominal memory: its GPU's memory in MiB (0 for no profiles).
int64_t ProductMemoryMib(const MigProductSpec& product);

// True when `product` lists `profile`.
bool HasProfile(const MigProductSpec& product, std::string_view profile);

// The product's profiles smaller than `profile` (less memory, or as much with fewer slices),
// largest first: memory descending, then slices descending. `profile` need not be the product's.
std::vector<std::string> DefaultChain(const MigProductSpec& product, std::string_view profile);

// The smallest of the product's profiles with at least `memory_mib` nominal memory (ties: the
// fewest slices); nullopt when even the largest has less. `memory_mib` <= 0 gives the smallest.
std::optional<std::string> SmallestFitting(const MigProductSpec& product, int64_t memory_mib);

class MigCatalog {
 public:
  explicit MigCatalog(const MigPolicy& policy) : policy_(policy) {}
  explicit MigCatalog(const MigPolicy&& policy) = delete;  // a view: the policy must outlive it

  // The product of a node labelled `gpu_product`, with `memory_mib` from nvidia.com/gpu.memory
  // (0 when unknown), by the rules in the file comment; nullptr when none matches.
  const MigProductSpec* ProductFor(std::string_view gpu_product, int64_t memory_mib = 0) const;

  // The product named `name` (a policy product first, then a built-in); nullptr when none is.
  const MigProductSpec* Find(std::string_view name) const;

  // The policy's explicit chain for `from`, or nullptr.
  const MigChain* ExplicitChain(std::string_view from) const;

  // What a pod asking for `profile` on `product` falls back to, in order: the policy's explicit
  // chain for `profile` when it has one, else DefaultChain(product, profile).
  std::vector<std::string> Chain(const MigProductSpec& product, std::string_view profile) const;

 private:
  const MigPolicy& policy_;
};

}  // namespace gpuadmit
