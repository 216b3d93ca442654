// Test clusters and fixtures: the demo snapshot of seed 003 (manifests/examples/demo-cluster.json)
// and helpers that bind more pods to it, so each test states the cluster it needs.
//
//   nlohmann::json cluster = DemoCluster();            // 7 of 12 mig-2g.20gb free on gpu-medium
//   AddBoundPods(cluster, "gpu-medium", "nvidia.com/mig-2g.20gb", 7);  // now none
//   InventorySnapshot s = SnapshotOf(cluster);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/admission/admission.h"
#include "core/inventory/gpu_metrics.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"

namespace gpuadmit::testing {

// A file under the source tree, e.g. "tests/fixtures/gpu/kubectl-pod.json".
std::string ReadSourceFile(const std::string& relative_path);
nlohmann::json ReadJsonFile(const std::string& relative_path);

nlohmann::json DemoCluster();

// Appends `count` Running pods bound to `node`, each asking for one `resource`.
void AddBoundPods(nlohmann::json& cluster, const std::string& node, const std::string& resource,
                  int count);

// Appends a Ready GPU node `name` (a copy of the demo's gpu-small, MIG off) whose `gpus` GPUs
// are shared `replicas` ways with `strategy` ("mps" or "time-slicing"), as the NVIDIA device
// plugin advertises them with renameByDefault: allocatable nvidia.com/gpu.shared = gpus x
// replicas, and GFD's labels nvidia.com/gpu.sharing-strategy, nvidia.com/gpu.replicas and
// nvidia.com/mps.capable ("true" for mps).
void AddSharedGpuNode(nlohmann::json& cluster, const std::string& name, const std::string& strategy,
                      int gpus, int replicas);

InventorySnapshot SnapshotOf(const nlohmann::json& cluster);

// The recorded Tesla T4 Node (tests/fixtures/nodes/tesla-t4-x2-gpu-2-kubectl-edit.yaml), renamed
// (name and kubernetes.io/hostname) to `name`, with `gpus` allocatable nvidia.com/gpu and the
// nvidia.com/gpu.product label `product`.
nlohmann::json GpuNode(const std::string& name, int gpus, const std::string& product = "Tesla-T4");

// A v1 List of `items`, as `kubectl get nodes,pods -A -o json` prints it.
nlohmann::json ListOf(const std::vector<nlohmann::json>& items);

// The uuid attribute of the DRA device `name` in `cluster`'s ResourceSlices, "" when none.
std::string DeviceUuid(const nlohmann::json& cluster, const std::string& name);

// dcgm-exporter exposition lines for whole GPU `gpu` of `host`: utilisation (percent) and
// framebuffer used and free (MiB), in the exporter's own label set.
std::string DcgmGpu(const std::string& host, int gpu, double utilization_percent,
                    double fb_used_mib, double fb_free_mib);

// The metrics of one reading of exposition text (a fixture, or DcgmGpu lines).
ClusterGpuMetrics MetricsOf(std::string_view exposition);

// tests/fixtures/gpu/kubectl-pod.json, a Pod CREATE in "default" asking one mig-2g.20gb, as the
// review of the pod `name` with request uid `uid`.
nlohmann::json GpuPodReview(const std::string& name, const std::string& uid);

// The RFC 6902 operations an AdmissionReview answer's base64 `patch` carries ([] when none).
nlohmann::json PatchOf(const nlohmann::json& response);

// `request` with its object and oldObject copied off its tape into nlohmann values, and no tape:
// the same request read through JsonView's other backend, for checking both are answered alike.
// The values live in the struct, which must stay put while `request` is read.
struct RequestOverValues {
  explicit RequestOverValues(const AdmissionRequest& decoded);
  RequestOverValues(const RequestOverValues&) = delete;
  RequestOverValues& operator=(const RequestOverValues&) = delete;

  nlohmann::json object;
  nlohmann::json old_object;
  AdmissionRequest request;
};

}  // namespace gpuadmit::testing
