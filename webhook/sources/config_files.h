// Loading the two files `serve` and `review` are given: the policy (--policy) and the cluster
// snapshot (--cluster, what `kubectl get nodes,pods -A -o json` prints, JSON or YAML).
//
//   auto policy = LoadPolicyFile("manifests/examples/policy.yaml");
//   if (!policy.ok()) std::cerr << policy.error().message;  // "FILE:3:1: unknown key ..."
//
// Thread safety: safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/inventory/inventory.h"
#include "core/policy/policy.h"
#include "core/result.h"

namespace gpuadmit {

// The policy in `path`. The error holds one "path:line:column: problem" line per issue. When it
// loads, `text_read` (optional) receives the text it was read from.
Result<Policy> LoadPolicyFile(const std::string& path, std::string* text_read = nullptr);

// The cluster list in `path` (JSON or YAML) as JSON, not yet read as an inventory.
Result<nlohmann::json> LoadClusterList(const std::string& path);

// The inventory a loaded cluster list describes (its error, when it did not load); errors name
// `path`. `policy` names the reservation annotation its decisions write.
Result<InventorySnapshot> ClusterSnapshotOf(const Result<nlohmann::json>& list,
                                            const std::string& path, const Policy& policy);

// The inventory described by the cluster list in `path`.
Result<InventorySnapshot> LoadClusterFile(const std::string& path, const Policy& policy);

}  // namespace gpuadmit
