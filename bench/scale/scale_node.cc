#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "bench/scale/scale_objects.h"
#include "bench/scale/scale_text.h"

namespace gpuadmit::bench {
namespace {

using text::AppendHex;
using text::Ip;
using text::Time;
using text::Uuid;

uint64_t Hash(uint64_t index, uint64_t purpose) { return ScaleHash(index, purpose); }

// What GPU Feature Discovery reports of a GPU model and its MIG profiles.
struct MigFacts {
  const char* profile;
  const char* memory;
  const char* multiprocessors;
  const char* slices;
};
struct GpuModel {
  const char* product;
  const char* memory;
  const char* family;
  const char* compute_major;
  std::array<MigFacts, 3> mig;  // 1g.10gb, 2g.20gb, 3g.40gb
};
constexpr GpuModel kH100{"NVIDIA-H100-80GB-HBM3",
                         "81559",
                         "hopper",
                         "9",
                         {{{"1g.10gb", "9984", "16", "1"},
                           {"2g.20gb", "20096", "32", "2"},
                           {"3g.40gb", "40320", "60", "3"}}}};
constexpr GpuModel kA100{"NVIDIA-A100-SXM4-80GB",
                         "81920",
                         "ampere",
                         "8",
                         {{{"1g.10gb", "9728", "14", "1"},
                           {"2g.20gb", "19968", "28", "2"},
                           {"3g.40gb", "40192", "42", "3"}}}};

const char* LayoutName(Layout layout) {
  static constexpr const char* kNames[] = {"whole", "mig-1g", "mig-3g", "mig-mixed"};
  return kNames[static_cast<int>(layout)];
}

// Per MIG profile: how many of it the node's eight GPUs are cut into.
std::array<int, 3> MigCounts(Layout layout) {
  switch (layout) {
    case Layout::kMig1g:
      return {56, 0, 0};
    case Layout::kMig3g:
      return {0, 0, 16};
    case Layout::kMigMixed:
      return {16, 8, 8};
    case Layout::kWholeGpu:
      break;
  }
  return {0, 0, 0};
}

void AppendStringMap(std::string& out, std::vector<std::pair<std::string, std::string>> entries) {
  std::sort(entries.begin(), entries.end());
  out += '{';
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ',';
    out += '"' + entries[i].first + "\":\"" + entries[i].second + '"';
  }
  out += '}';
}

// The node's resources: `allocatable` is capacity less the system reservation.
void AppendResources(std::string& out, const NodeShape& n, bool allocatable) {
  std::vector<std::pair<std::string, std::string>> r = {
      {"cpu", allocatable ? "207400m" : "208"},
      {"ephemeral-storage", allocatable ? "2779408012318" : "3029783112Ki"},
      {"hugepages-1Gi", "0"},
      {"hugepages-2Mi", "0"},
      {"memory", allocatable ? "1902129488Ki" : "1915893072Ki"},
      {"pods", "110"},
      {"nvidia.com/gpu", n.layout == Layout::kWholeGpu ? "8" : "0"}};
  std::array<int, 3> counts = MigCounts(n.layout);
  const GpuModel& gpu = n.h100 ? kH100 : kA100;
  for (size_t p = 0; p < 3; ++p) {
    if (counts[p] > 0) {
      r.emplace_back(std::string("nvidia.com/mig-") + gpu.mig[p].profile,
                     std::to_string(counts[p]));
    }
  }
  AppendStringMap(out, std::move(r));
}

std::vector<std::pair<std::string, std::string>> NodeLabels(const NodeShape& n,
                                                            const std::string& name,
                                                            uint64_t seed) {
  const GpuModel& gpu = n.h100 ? kH100 : kA100;
  bool mig = n.layout != Layout::kWholeGpu;
  std::vector<std::pair<std::string, std::string>> l = {
      {"beta.kubernetes.io/arch", "amd64"},
      {"beta.kubernetes.io/instance-type", n.h100 ? "a3-highgpu-8g" : "a2-ultragpu-8g"},
      {"beta.kubernetes.io/os", "linux"},
      {"cloud.google.com/gke-nodepool", std::string(gpu.family) + "-" + LayoutName(n.layout)},
      {"kubernetes.io/arch", "amd64"},
      {"kubernetes.io/hostname", name},
      {"kubernetes.io/os", "linux"},
      {"node.kubernetes.io/instance-type", n.h100 ? "a3-highgpu-8g" : "a2-ultragpu-8g"},
      {"topology.kubernetes.io/region", "us-central1"},
      {"topology.kubernetes.io/zone", seed % 2 == 0 ? "us-central1-a" : "us-central1-c"},
      {"feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true"},
      {"feature.node.kubernetes.io/cpu-cpuid.AMXTILE", n.h100 ? "true" : "false"},
      {"feature.node.kubernetes.io/cpu-hardware_multithreading", "true"},
      {"feature.node.kubernetes.io/kernel-version.full", "6.1.85+"},
      {"feature.node.kubernetes.io/pci-10de.present", "true"},
      {"feature.node.kubernetes.io/system-os_release.ID", "cos"},
      {"feature.node.kubernetes.io/system-os_release.VERSION_ID", "113"},
      {"nvidia.com/cuda.driver-version.full", "550.54.15"},
      {"nvidia.com/cuda.driver-version.major", "550"},
      {"nvidia.com/cuda.driver-version.minor", "54"},
      {"nvidia.com/cuda.driver-version.revision", "15"},
      {"nvidia.com/cuda.runtime-version.full", "12.4"},
      {"nvidia.com/cuda.runtime-version.major", "12"},
      {"nvidia.com/cuda.runtime-version.minor", "4"},
      {"nvidia.com/gfd.timestamp", std::to_string(1715700000 + seed % 100000)},
      {"nvidia.com/gpu-driver-upgrade-state", "upgrade-done"},
      {"nvidia.com/gpu.compute.major", gpu.compute_major},
      {"nvidia.com/gpu.compute.minor", "0"},
      {"nvidia.com/gpu.count", "8"},
      {"nvidia.com/gpu.deploy.container-toolkit", "true"},
      {"nvidia.com/gpu.deploy.dcgm", "true"},
      {"nvidia.com/gpu.deploy.dcgm-exporter", "true"},
      {"nvidia.com/gpu.deploy.device-plugin", "true"},
      {"nvidia.com/gpu.deploy.driver", "true"},
      {"nvidia.com/gpu.deploy.gpu-feature-discovery", "true"},
      {"nvidia.com/gpu.deploy.mig-manager", "true"},
      {"nvidia.com/gpu.deploy.operator-validator", "true"},
      {"nvidia.com/gpu.family", gpu.family},
      {"nvidia.com/gpu.machine", n.h100 ? "Google-Compute-Engine-a3" : "Google-Compute-Engine-a2"},
      {"nvidia.com/gpu.memory", gpu.memory},
      {"nvidia.com/gpu.present", "true"},
      {"nvidia.com/gpu.product", gpu.product},
      {"nvidia.com/gpu.replicas", mig ? "0" : "1"},
      {"nvidia.com/gpu.sharing-strategy", "none"},
      {"nvidia.com/mig.capable", "true"},
      {"nvidia.com/mig.config",
       mig ? std::string("custom-") + LayoutName(n.layout) : "all-disabled"},
      {"nvidia.com/mig.config.state", "success"},
      {"nvidia.com/mig.strategy", mig ? "mixed" : "single"},
      {"nvidia.com/mps.capable", "false"}};
  std::array<int, 3> counts = MigCounts(n.layout);
  for (size_t p = 0; p < 3; ++p) {
    if (counts[p] == 0) continue;
    const MigFacts& m = gpu.mig[p];
    std::string prefix = std::string("nvidia.com/mig-") + m.profile + ".";
    std::string units = m.slices;
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, std::string>>{
             {"count", std::to_string(counts[p])},
             {"engines.copy", units},
             {"engines.decoder", units},
             {"engines.encoder", "0"},
             {"engines.jpeg", units},
             {"engines.ofa", "0"},
             {"memory", m.memory},
             {"multiprocessors", m.multiprocessors},
             {"product", std::string(gpu.product) + "-MIG-" + m.profile},
             {"replicas", "1"},
             {"sharing-strategy", "none"},
             {"slices.ci", units},
             {"slices.gi", units}}) {
      l.emplace_back(prefix + key, value);
    }
  }
  return l;
}

void AppendCondition(std::string& out, const char* type, const char* status, const char* reason,
                     const char* message, const std::string& heartbeat, bool last = false) {
  out += std::string(R"({"type":")") + type + R"(","status":")" + status +
         R"(","lastHeartbeatTime":")" + heartbeat +
         R"(","lastTransitionTime":"2025-05-02T07:58:41Z","reason":")" + reason +
         R"(","message":")" + message + "\"}" + (last ? "" : ",");
}

}  // namespace

std::string NodeName(int node, const NodeShape& n) {
  std::string name =
      std::string("gke-scale-") + (n.h100 ? "h100-" : "a100-") + LayoutName(n.layout) + "-";
  AppendHex(name, Hash(static_cast<uint64_t>(node / 500), 30), 8);
  char index[8];
  std::snprintf(index, sizeof index, "-%05d", node);
  return name + index;
}

void AppendNode(std::string& out, int node, const NodeShape& n) {
  uint64_t seed = static_cast<uint64_t>(node);
  std::string name = NodeName(node, n);
  std::string heartbeat = Time(Hash(seed, 31), true);
  std::string ip = Ip(128, seed);
  out += R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","uid":")" +
         Uuid(Hash(seed, 32)) + R"(","resourceVersion":")" + std::to_string(50000 + node) +
         R"(","creationTimestamp":")" + Time(Hash(seed, 33), false) + R"(","labels":)";
  AppendStringMap(out, NodeLabels(n, name, seed));
  out +=
      R"(,"annotations":{"container.googleapis.com/instance_id":")" +
      std::to_string(Hash(seed, 34) % 10000000000000000000ULL) +
      R"(","csi.volume.kubernetes.io/nodeid":"{\"pd.csi.storage.gke.io\":\"projects/scale/zones/us-central1-a/instances/)" +
      name +
      R"(\"}","nfd.node.kubernetes.io/feature-labels":"cpu-cpuid.AVX512F,cpu-cpuid.AMXTILE,cpu-hardware_multithreading,kernel-version.full,pci-10de.present,system-os_release.ID,system-os_release.VERSION_ID","nfd.node.kubernetes.io/worker.version":"v0.15.4","node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"},)";
  out +=
      R"("managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":")" +
      heartbeat +
      R"(","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:allocatable":{"f:nvidia.com/gpu":{}},"f:capacity":{"f:nvidia.com/gpu":{}},"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"PIDPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}}},"f:images":{},"f:nodeInfo":{"f:bootID":{}}}},"subresource":"status"}]},)";
  out += R"("spec":{"podCIDR":"10.)" + std::to_string(64 + node / 256) + "." +
         std::to_string(node % 256) + R"(.0/24","podCIDRs":["10.)" +
         std::to_string(64 + node / 256) + "." + std::to_string(node % 256) +
         R"(.0/24"],"providerID":"gce://scale/us-central1-a/)" + name + "\"";
  std::vector<std::string> taints;
  if (n.tainted)
    taints.push_back(R"({"key":"dedicated","value":"training","effect":"NoSchedule"})");
  if (n.cordoned) {
    taints.push_back(
        R"({"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule","timeAdded":")" +
        heartbeat + "\"}");
  }
  if (n.not_ready) {
    for (const char* effect : {"NoSchedule", "NoExecute"}) {
      taints.push_back(std::string(R"({"key":"node.kubernetes.io/unreachable","effect":")") +
                       effect + R"(","timeAdded":")" + heartbeat + "\"}");
    }
  }
  if (!taints.empty()) {
    out += R"(,"taints":[)";
    for (size_t i = 0; i < taints.size(); ++i) out += (i > 0 ? "," : "") + taints[i];
    out += ']';
  }
  if (n.cordoned) out += R"(,"unschedulable":true)";
  out += R"(},"status":{"capacity":)";
  AppendResources(out, n, false);
  out += R"(,"allocatable":)";
  AppendResources(out, n, true);
  out += R"(,"conditions":[)";
  AppendCondition(out, "NetworkUnavailable", "False", "RouteCreated",
                  "RouteController created a route", heartbeat);
  AppendCondition(out, "MemoryPressure", "False", "KubeletHasSufficientMemory",
                  "kubelet has sufficient memory available", heartbeat);
  AppendCondition(out, "DiskPressure", "False", "KubeletHasNoDiskPressure",
                  "kubelet has no disk pressure", heartbeat);
  AppendCondition(out, "PIDPressure", "False", "KubeletHasSufficientPID",
                  "kubelet has sufficient PID available", heartbeat);
  if (n.not_ready) {
    AppendCondition(out, "Ready", "Unknown", "NodeStatusUnknown",
                    "Kubelet stopped posting node status.", heartbeat, true);
  } else {
    AppendCondition(out, "Ready", "True", "KubeletReady", "kubelet is posting ready status",
                    heartbeat, true);
  }
  out += R"(],"addresses":[{"type":"InternalIP","address":")" + ip +
         R"("},{"type":"Hostname","address":")" + name +
         R"("}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"machineID":")";
  AppendHex(out, Hash(seed, 35), 32);
  out +=
      R"(","systemUUID":")" + Uuid(Hash(seed, 36)) + R"(","bootID":")" + Uuid(Hash(seed, 37)) +
      R"(","kernelVersion":"6.1.85+","osImage":"Container-Optimized OS from Google","containerRuntimeVersion":"containerd://1.7.15","kubeletVersion":"v1.30.1-gke.1329000","kubeProxyVersion":"v1.30.1-gke.1329000","operatingSystem":"linux","architecture":"amd64"},"images":[)";
  static constexpr std::pair<const char*, const char*> kImages[] = {
      {"nvcr.io/nvidia/pytorch:24.05-py3", "9932184451"},
      {"nvcr.io/nvidia/tritonserver:24.05-py3", "7563940203"},
      {"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04", "1989114969"},
      {"nvcr.io/nvidia/k8s-device-plugin:v0.15.0", "173926554"},
      {"registry.k8s.io/pause:3.10", "320368"}};
  for (size_t i = 0; i < std::size(kImages); ++i) {
    std::string image = kImages[i].first;
    out += std::string(i > 0 ? "," : "") + R"({"names":[")" + image.substr(0, image.rfind(':')) +
           "@sha256:";
    AppendHex(out, Hash(i, 38), 64);
    out += R"(",")" + image + R"("],"sizeBytes":)" + kImages[i].second + "}";
  }
  out += "]}}";
}

}  // namespace gpuadmit::bench
