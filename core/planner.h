// The planner: what to change in one pod spec, decided from the pod's needs, the inventory
// snapshot and the policy. A pure function: same inputs, same decision.
//
//   Decision d = Plan(PodRequest::From(ns, name, pod_spec), snapshot, policy);
//   d.swaps        e.g. {nvidia.com/mig-2g.20gb -> nvidia.com/mig-1g.10gb}
//   d.annotations  e.g. {gpuadmit.io/fallback: "2g.20gb->1g.10gb"}
//
// Thread safety: pure function over immutable inputs.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/inventory.h"
#include "core/policy.h"
#include "core/requirements.h"
#include "core/reservation_ledger.h"
#include "core/scheduling.h"

namespace gpuadmit {

struct PodRequest {
  std::string ns;
  std::string name;  // for messages: "default/train-0" or "Deployment default/web"
  PodRequirements needs;
  SchedulingConstraints constraints;

  static PodRequest From(std::string ns, std::string name, const nlohmann::json& pod_spec);
};

// Replace resource `from` by `to` in every container's limits and requests.
struct ResourceSwap {
  std::string from;
  std::string to;
};

struct Decision {
  std::vector<ResourceSwap> swaps;
  std::vector<std::pair<std::string, std::string>> annotations;  // key, value
  std::vector<std::string> warnings;  // one line each, for the AdmissionResponse
  std::vector<std::string> trail;     // why, step by step, for --explain and debug logs
  std::optional<std::string> deny;    // set when the policy says to refuse the pod
  std::vector<Claim> claims;          // the devices the decision counted on, to reserve

  bool Changes() const { return !swaps.empty() || !annotations.empty(); }
};

// Decides the MIG fallback (seed 003): each MIG profile the pod asks for that is free on no node
// the pod may use is replaced by the largest smaller profile, of a GPU product that offers the
// requested one, that is free on such a node. Nothing free: unchanged with a warning, or denied
// if the policy says so. A pod whose GPU quantities cannot all be read is left unchanged.
// Free counts are net of `reservations` (when given), except those held under `own_key`.
Decision Plan(const PodRequest& pod, const InventorySnapshot& snapshot, const Policy& policy,
              const Reservations* reservations = nullptr, std::string_view own_key = {});

}  // namespace gpuadmit
