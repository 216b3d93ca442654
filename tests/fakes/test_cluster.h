// Test clusters and fixtures: the demo snapshot of seed 003 (manifests/examples/demo-cluster.json)
// and helpers that bind more pods to it, so each test states the cluster it needs.
//
//   nlohmann::json cluster = DemoCluster();            // 7 of 12 mig-2g.20gb free on gpu-medium
//   AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);  // now none
//   InventorySnapshot s = SnapshotOf(cluster);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/inventory.h"

namespace gpuadmit::testing {

// A file under the source tree, e.g. "tests/fixtures/gpu/kubectl-pod.json".
std::string ReadSourceFile(const std::string& relative_path);
nlohmann::json ReadJsonFile(const std::string& relative_path);

nlohmann::json DemoCluster();

// Appends `count` Running pods bound to `node`, each asking for one `resource`.
void AddBoundPods(nlohmann::json& cluster, const std::string& node, const std::string& resource,
                  int count);

InventorySnapshot SnapshotOf(const nlohmann::json& cluster);

// The RFC 6902 operations an AdmissionReview answer's base64 `patch` carries ([] when none).
nlohmann::json PatchOf(const nlohmann::json& response);

}  // namespace gpuadmit::testing
