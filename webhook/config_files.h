// Loading the two files `serve` and `review` are given: the policy (--policy) and the cluster
// snapshot (--cluster, what `kubectl get nodes,pods -A -o json` prints, JSON or YAML).
//
//   auto policy = LoadPolicyFile("manifests/examples/policy.yaml");
//   if (!policy.ok()) std::cerr << policy.error().message;  // "FILE:3:1: unknown key ..."
//
// Thread safety: safe from any thread.
#pragma once

#include <string>

#include "core/inventory.h"
#include "core/policy.h"
#include "core/result.h"

namespace gpuadmit {

// The policy in `path`. The error holds one "path:line:column: problem" line per issue.
Result<Policy> LoadPolicyFile(const std::string& path);

// The inventory described by the cluster list in `path`.
Result<InventorySnapshot> LoadClusterFile(const std::string& path);

}  // namespace gpuadmit
