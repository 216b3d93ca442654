#include "bench/scale_cluster.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <utility>

namespace gpuadmit::bench {
namespace {

// SplitMix64's finaliser: every generated detail is a hash of (object index, purpose), so any
// object can be rendered alone, in either process, and come out the same.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t Hash(uint64_t index, uint64_t purpose) { return Mix(Mix(index) ^ (purpose << 48)); }

// A JSON text with $X placeholders (X in A-Z, a-z), rendered by appending.
class Template {
 public:
  using Values = std::array<std::string_view, 52>;

  explicit Template(std::string_view text) {
    size_t start = 0;
    for (size_t at = text.find('$'); at != std::string_view::npos; at = text.find('$', start)) {
      char c = text[at + 1];
      parts_.push_back({text.substr(start, at - start), c >= 'a' ? 26 + (c - 'a') : c - 'A'});
      start = at + 2;
    }
    tail_ = text.substr(start);
  }

  void Render(std::string& out, const Values& values) const {
    for (const Part& p : parts_) {
      out += p.literal;
      out += values[p.slot];
    }
    out += tail_;
  }

 private:
  struct Part {
    std::string_view literal;
    int slot;
  };
  std::vector<Part> parts_;
  std::string_view tail_;
};

// A Deployment's pod as the apiserver sends it (kubectl get pod -o json, compact), after
// tests/fixtures/pods/pod-kubectl-get-o-json-kind-cluster.json with what current clusters add:
// managedFields of the controller and the kubelet, env from the downward API, a projected
// service-account volume (about 4.5 KB running, 3.6 KB pending). $A app, $C created, $G GPU toleration, $H pod-template-hash, $I image,
// $K kube-api-access volume, $M name, $N namespace, $O owner uid, $P pod IP, $Q resources,
// $R resourceVersion, $S nodeName or nodeSelector, $T status time, $U uid, $Z status.
constexpr std::string_view kPod =
    R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"$M","generateName":"$A-$H-","namespace":"$N","uid":"$U","resourceVersion":"$R","creationTimestamp":"$C","labels":{"app":"$A","pod-template-hash":"$H"},"annotations":{"prometheus.io/scrape":"true"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"$A-$H","uid":"$O","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"$C","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"$O\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{},"f:requests":{}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"$T","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"$P\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},"spec":{"volumes":[{"name":"$K","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],"containers":[{"name":"main","image":"$I","env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"resources":$Q,"volumeMounts":[{"name":"$K","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",$S"serviceAccountName":"default","serviceAccount":"default","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}$G],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":$Z})";

// A running pod's status. $B Ready status, $C created, $T status time, $I image, $J imageID,
// $L lastState, $X containerID, $b ready, $h host IP, $P pod IP, $r restartCount.
constexpr std::string_view kRunningStatus =
    R"({"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"$C"},{"type":"Ready","status":"$B","lastProbeTime":null,"lastTransitionTime":"$T"},{"type":"ContainersReady","status":"$B","lastProbeTime":null,"lastTransitionTime":"$T"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"$C"}],"hostIP":"$h","hostIPs":[{"ip":"$h"}],"podIP":"$P","podIPs":[{"ip":"$P"}],"startTime":"$C","containerStatuses":[{"name":"main","state":{"running":{"startedAt":"$T"}},"lastState":$L,"ready":$b,"restartCount":$r,"image":"$I","imageID":"$J","containerID":"containerd://$X","started":$b}],"qosClass":"Burstable"})";

// $C created, $Q the resource the scheduler found short.
constexpr std::string_view kPendingStatus =
    R"({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","lastProbeTime":null,"lastTransitionTime":"$C","reason":"Unschedulable","message":"0/5000 nodes are available: 12 node(s) were unschedulable, 4988 Insufficient $Q. preemption: 0/5000 nodes are available: 5000 No preemption victims found for incoming pod."}],"qosClass":"Burstable"})";

const Template& PodTemplate() {
  static const Template t(kPod);
  return t;
}
const Template& RunningStatusTemplate() {
  static const Template t(kRunningStatus);
  return t;
}
const Template& PendingStatusTemplate() {
  static const Template t(kPendingStatus);
  return t;
}

constexpr int Slot(char c) { return c >= 'a' ? 26 + (c - 'a') : c - 'A'; }

// The characters Kubernetes uses for generated name suffixes (no vowels, no confusable digits).
constexpr std::string_view kNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

void AppendSuffix(std::string& out, uint64_t value, int length) {
  for (int i = 0; i < length; ++i) {
    out += kNameAlphabet[value % kNameAlphabet.size()];
    value /= kNameAlphabet.size();
  }
}

void AppendHex(std::string& out, uint64_t seed, int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < length; ++i) {
    if (i % 16 == 0) seed = Mix(seed + static_cast<uint64_t>(i));
    out += kDigits[(seed >> (4 * (i % 16))) & 15];
  }
}

std::string Uuid(uint64_t seed) {
  std::string hex;
  AppendHex(hex, seed, 32);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-4" + hex.substr(13, 3) + "-a" +
         hex.substr(17, 3) + "-" + hex.substr(20, 12);
}

// An RFC 3339 time in 2025-05/06, from a seed.
std::string Time(uint64_t seed, bool june) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2025-%02d-%02dT%02d:%02d:%02dZ", june ? 6 : 5,
                static_cast<int>(1 + seed % 28), static_cast<int>((seed >> 8) % 24),
                static_cast<int>((seed >> 16) % 60), static_cast<int>((seed >> 24) % 60));
  return buf;
}

std::string Ip(int a, uint64_t index) {
  return "10." + std::to_string(a + ((index >> 16) & 63)) + "." +
         std::to_string((index >> 8) & 255) + "." + std::to_string(index & 255);
}

const char* ResourceName(GpuAsk ask) {
  switch (ask) {
    case GpuAsk::kGpu:
      return "nvidia.com/gpu";
    case GpuAsk::kMig1g:
      return "nvidia.com/mig-1g.10gb";
    case GpuAsk::kMig2g:
      return "nvidia.com/mig-2g.20gb";
    case GpuAsk::kMig3g:
      return "nvidia.com/mig-3g.40gb";
    case GpuAsk::kNone:
      break;
  }
  return "";
}

std::string Resources(GpuAsk ask, int count) {
  if (ask == GpuAsk::kNone) {
    return R"({"limits":{"memory":"512Mi"},"requests":{"cpu":"250m","memory":"256Mi"}})";
  }
  std::string gpu = std::string("\"") + ResourceName(ask) + "\":\"" + std::to_string(count) + "\"";
  return R"({"limits":{"cpu":"16","memory":"128Gi",)" + gpu +
         R"(},"requests":{"cpu":"8","memory":"64Gi",)" + gpu + "}}";
}

// The names a pod's generated details hang on.
struct PodNames {
  std::string ns;
  std::string app;
  std::string hash;  // pod-template-hash
  std::string name;
  uint64_t app_id = 0;
  const char* image = "";
};

PodNames NamesOf(int pod, const PodShape& shape, bool sentinel) {
  PodNames n;
  if (sentinel) {
    n.ns = "bench";
    n.app = "scale-sentinel";
    n.hash = "sentinel00";
    n.name = "scale-sentinel";
    n.image = "registry.k8s.io/pause:3.10";
    return n;
  }
  n.app_id = Hash(static_cast<uint64_t>(pod), 10) % 3000;
  static constexpr const char* kCpuKinds[] = {"web", "batch", "api"};
  static constexpr const char* kCpuImages[] = {
      "registry.example.com/platform/web-frontend:3.14.2",
      "registry.example.com/data/etl-runner:1.9.0",
      "registry.example.com/platform/api-gateway:2.3.7"};
  if (shape.ask == GpuAsk::kNone) {
    n.app = std::string(kCpuKinds[n.app_id % 3]) + "-" + std::to_string(n.app_id);
    n.image = kCpuImages[n.app_id % 3];
  } else if (shape.ask == GpuAsk::kGpu) {
    n.app = "train-" + std::to_string(n.app_id);
    n.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  } else {
    n.app = "infer-" + std::to_string(n.app_id);
    n.image = "nvcr.io/nvidia/tritonserver:24.05-py3";
  }
  n.ns = "team-" + std::to_string(10 + n.app_id % 40);
  AppendSuffix(n.hash, Hash(n.app_id, 11), 10);
  n.name = n.app + "-" + n.hash + "-";
  AppendSuffix(n.name, static_cast<uint64_t>(pod), 5);
  return n;
}

std::string Base64Url(std::string_view in) {
  static constexpr char kChars[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t bits = 0;
  int have = 0;
  for (unsigned char c : in) {
    bits = (bits << 8) | c;
    have += 8;
    while (have >= 6) out += kChars[(bits >> (have -= 6)) & 63];
  }
  if (have > 0) out += kChars[(bits << (6 - have)) & 63];
  return out;
}

// An apiserver continue token: base64url of the etcd key the next page starts after.
std::string ContinueToken(uint64_t resource_version, std::string_view last_key) {
  return Base64Url(R"({"v":"meta.k8s.io/v1","rv":)" + std::to_string(resource_version) +
                   R"(,"start":")" + std::string(last_key) + R"(\u0000"})");
}

template <typename AppendItem, typename KeyOf>
ListPages Pages(const char* kind, int count, int page_size, uint64_t resource_version,
                AppendItem append_item, KeyOf key_of) {
  ListPages pages;
  for (int start = 0; start < count; start += page_size) {
    int end = std::min(count, start + page_size);
    std::string body = std::string(R"({"kind":")") + kind +
                       R"(","apiVersion":"v1","metadata":{"resourceVersion":")" +
                       std::to_string(resource_version) + "\"";
    std::string token = end < count ? ContinueToken(resource_version, key_of(end - 1)) : "";
    if (!token.empty()) {
      body += R"(,"continue":")" + token + R"(","remainingItemCount":)" +
              std::to_string(count - end);
    }
    body += R"(},"items":[)";
    for (int i = start; i < end; ++i) {
      if (i > start) body += ',';
      append_item(body, i);
    }
    body += "]}";
    pages.bodies.push_back(std::move(body));
    pages.continue_tokens.push_back(std::move(token));
  }
  return pages;
}


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
      r.emplace_back(std::string("nvidia.com/mig-") + gpu.mig[p].profile, std::to_string(counts[p]));
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
      {"nvidia.com/mig.config", mig ? std::string("custom-") + LayoutName(n.layout) : "all-disabled"},
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

ScaleCluster::ScaleCluster(int nodes, int pods) {
  nodes_.resize(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    NodeShape& n = nodes_[static_cast<size_t>(i)];
    int tenth = i % 10;  // 60% whole GPUs, 10% 7x1g, 10% 2x3g, 20% mixed
    n.layout = tenth < 6    ? Layout::kWholeGpu
               : tenth == 6 ? Layout::kMig1g
               : tenth == 7 ? Layout::kMig3g
                            : Layout::kMigMixed;
    n.h100 = (i / 10) % 2 == 0;
    n.cordoned = Hash(static_cast<uint64_t>(i), 2) % 100 == 0;
    n.not_ready = !n.cordoned && Hash(static_cast<uint64_t>(i), 3) % 200 == 0;
    n.tainted = Hash(static_cast<uint64_t>(i), 4) % 20 == 0;
  }
  PlanPods(pods);
}

void ScaleCluster::PlanPods(int pods) {
  int nodes = node_count();
  int pending = pods * 3 / 100;
  int bound = pods - pending;
  // Between 19 and 39 pods a node before scaling to the total; kubelet's limit is 110.
  std::vector<int> per_node(static_cast<size_t>(nodes));
  int64_t weights = 0;
  for (int i = 0; i < nodes; ++i) {
    per_node[static_cast<size_t>(i)] = 19 + static_cast<int>(Hash(static_cast<uint64_t>(i), 5) % 21);
    weights += per_node[static_cast<size_t>(i)];
  }
  int placed = 0;
  for (int& c : per_node) {
    c = std::min<int>(110, static_cast<int>(c * static_cast<int64_t>(bound) / weights));
    placed += c;
  }
  for (int i = 0; placed < bound; i = (i + 1) % nodes) {
    if (per_node[static_cast<size_t>(i)] < 110) ++per_node[static_cast<size_t>(i)], ++placed;
  }

  pods_.reserve(static_cast<size_t>(pods) + 1);
  for (int i = 0; i < nodes; ++i) {
    const NodeShape& node = nodes_[static_cast<size_t>(i)];
    int gpus_left = 6 + static_cast<int>(Hash(static_cast<uint64_t>(i), 6) % 3);
    int left_1g = node.layout == Layout::kMig1g ? 56 : node.layout == Layout::kMigMixed ? 16 : 0;
    int left_3g = node.layout == Layout::kMig3g ? 16 : node.layout == Layout::kMigMixed ? 8 : 0;
    int left_2g = node.layout == Layout::kMigMixed ? 8 : 0;
    for (int k = 0; k < per_node[static_cast<size_t>(i)]; ++k) {
      PodShape p;
      p.node = i;
      uint64_t h = Hash(pods_.size(), 7);
      auto take = [&](GpuAsk ask, int count, int& left) {
        if (left < count) return false;
        left -= count;
        p.ask = ask;
        p.count = static_cast<uint8_t>(count);
        return true;
      };
      if (left_2g > 0) {
        take(GpuAsk::kMig2g, 1, left_2g);  // every 2g.20gb in the cluster is in use
      } else if (h % 3 == 0) {
        uint64_t pick = (h >> 8) % 20;
        switch (node.layout) {
          case Layout::kWholeGpu:
            take(GpuAsk::kGpu, pick == 0 ? 4 : pick < 4 ? 2 : 1, gpus_left) ||
                take(GpuAsk::kGpu, 1, gpus_left);
            break;
          case Layout::kMig1g:
            take(GpuAsk::kMig1g, 1, left_1g);
            break;
          case Layout::kMig3g:
            take(GpuAsk::kMig3g, 1, left_3g);
            break;
          case Layout::kMigMixed:
            (pick % 2 == 0 && take(GpuAsk::kMig3g, 1, left_3g)) ||
                take(GpuAsk::kMig1g, 1, left_1g);
            break;
        }
      }
      pods_.push_back(p);
    }
  }
  for (int q = 0; q < pending; ++q) {
    PodShape p;
    uint64_t h = Hash(pods_.size(), 8);
    if (h % 4 == 0) p.ask = GpuAsk::kMig2g, p.count = 1;
    if (h % 4 == 1) p.ask = GpuAsk::kGpu, p.count = 1;
    if ((h >> 4) % 10 == 0) p.wanted_node = static_cast<int32_t>(Hash(pods_.size(), 9) % nodes);
    pods_.push_back(p);
  }
  PodShape sentinel;
  sentinel.node = 0;
  pods_.push_back(sentinel);
}

uint64_t ScaleCluster::list_resource_version() const { return kResourceVersionBase; }

std::string ScaleCluster::NodeName(int node) const {
  const NodeShape& n = nodes_[static_cast<size_t>(node)];
  std::string name =
      std::string("gke-scale-") + (n.h100 ? "h100-" : "a100-") + LayoutName(n.layout) + "-";
  AppendHex(name, Hash(static_cast<uint64_t>(node / 500), 30), 8);
  char index[8];
  std::snprintf(index, sizeof index, "-%05d", node);
  return name + index;
}

void ScaleCluster::AppendNode(std::string& out, int node) const {
  const NodeShape& n = nodes_[static_cast<size_t>(node)];
  uint64_t seed = static_cast<uint64_t>(node);
  std::string name = NodeName(node);
  std::string heartbeat = Time(Hash(seed, 31), true);
  std::string ip = Ip(128, seed);
  out += R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","uid":")" +
         Uuid(Hash(seed, 32)) + R"(","resourceVersion":")" + std::to_string(50000 + node) +
         R"(","creationTimestamp":")" + Time(Hash(seed, 33), false) + R"(","labels":)";
  AppendStringMap(out, NodeLabels(n, name, seed));
  out += R"(,"annotations":{"container.googleapis.com/instance_id":")" +
         std::to_string(Hash(seed, 34) % 10000000000000000000ULL) +
         R"(","csi.volume.kubernetes.io/nodeid":"{\"pd.csi.storage.gke.io\":\"projects/scale/zones/us-central1-a/instances/)" +
         name +
         R"(\"}","nfd.node.kubernetes.io/feature-labels":"cpu-cpuid.AVX512F,cpu-cpuid.AMXTILE,cpu-hardware_multithreading,kernel-version.full,pci-10de.present,system-os_release.ID,system-os_release.VERSION_ID","nfd.node.kubernetes.io/worker.version":"v0.15.4","node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"},)";
  out += R"("managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":")" +
         heartbeat +
         R"(","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:allocatable":{"f:nvidia.com/gpu":{}},"f:capacity":{"f:nvidia.com/gpu":{}},"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"PIDPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}}},"f:images":{},"f:nodeInfo":{"f:bootID":{}}}},"subresource":"status"}]},)";
  out += R"("spec":{"podCIDR":"10.)" + std::to_string(64 + node / 256) + "." +
         std::to_string(node % 256) + R"(.0/24","podCIDRs":["10.)" +
         std::to_string(64 + node / 256) + "." + std::to_string(node % 256) +
         R"(.0/24"],"providerID":"gce://scale/us-central1-a/)" + name + "\"";
  std::vector<std::string> taints;
  if (n.tainted) taints.push_back(R"({"key":"dedicated","value":"training","effect":"NoSchedule"})");
  if (n.cordoned) {
    taints.push_back(R"({"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule","timeAdded":")" +
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
  AppendCondition(out, "NetworkUnavailable", "False", "RouteCreated", "RouteController created a route",
                  heartbeat);
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
  out += R"(","systemUUID":")" + Uuid(Hash(seed, 36)) + R"(","bootID":")" + Uuid(Hash(seed, 37)) +
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

PodVersion ScaleCluster::InitialVersion(int pod) const {
  return {pods_[static_cast<size_t>(pod)].node, 0, 100000 + static_cast<uint64_t>(pod)};
}

void ScaleCluster::AppendPod(std::string& out, int pod, const PodVersion& version) const {
  const PodShape& shape = pods_[static_cast<size_t>(pod)];
  bool sentinel = pod == pod_count();
  PodNames n = NamesOf(pod, shape, sentinel);
  uint64_t seed = static_cast<uint64_t>(pod);
  std::string created = Time(Hash(seed, 12), false);
  std::string changed = Time(Hash(seed, 13 + version.restarts), true);
  std::string uid = Uuid(Hash(seed, 14));
  std::string owner_uid = Uuid(Hash(n.app_id, 16));
  std::string rv = std::to_string(version.resource_version);
  std::string pod_ip = Ip(64, seed);
  std::string volume = "kube-api-access-";
  AppendSuffix(volume, Hash(seed, 18), 5);
  std::string resources = Resources(shape.ask, shape.count);
  std::string placement;
  if (version.node >= 0) {
    placement = R"("nodeName":")" + NodeName(version.node) + "\",";
  } else if (shape.wanted_node >= 0) {
    placement = R"("nodeSelector":{"kubernetes.io/hostname":")" + NodeName(shape.wanted_node) +
                "\"},";
  }
  std::string status;
  Template::Values v{};
  if (version.node >= 0) {
    std::string host_ip = Ip(128, static_cast<uint64_t>(version.node));
    std::string image_id = std::string(n.image);
    image_id = image_id.substr(0, image_id.find(':')) + "@sha256:";
    AppendHex(image_id, Hash(n.app_id % 3, 20), 64);
    std::string container_id;
    AppendHex(container_id, Hash(seed, 21 + version.restarts), 64);
    std::string last_state = "{}";
    if (version.restarts > 0) {
      last_state = R"({"terminated":{"exitCode":137,"reason":"OOMKilled","startedAt":")" +
                   created + R"(","finishedAt":")" + changed + R"(","containerID":"containerd://)";
      AppendHex(last_state, Hash(seed, 20 + version.restarts), 64);
      last_state += "\"}}";
    }
    bool ready = version.restarts % 3 != 1;
    std::string restarts = std::to_string(version.restarts);
    v[Slot('B')] = ready ? "True" : "False";
    v[Slot('C')] = created;
    v[Slot('T')] = changed;
    v[Slot('I')] = n.image;
    v[Slot('J')] = image_id;
    v[Slot('L')] = last_state;
    v[Slot('X')] = container_id;
    v[Slot('b')] = ready ? "true" : "false";
    v[Slot('h')] = host_ip;
    v[Slot('P')] = pod_ip;
    v[Slot('r')] = restarts;
    RunningStatusTemplate().Render(status, v);
  } else {
    v[Slot('C')] = created;
    v[Slot('Q')] = shape.ask == GpuAsk::kNone ? "cpu" : ResourceName(shape.ask);
    PendingStatusTemplate().Render(status, v);
    pod_ip.clear();
  }
  v = {};
  v[Slot('A')] = n.app;
  v[Slot('C')] = created;
  v[Slot('G')] = shape.ask == GpuAsk::kNone
                     ? ""
                     : R"(,{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"})";
  v[Slot('H')] = n.hash;
  v[Slot('I')] = n.image;
  v[Slot('K')] = volume;
  v[Slot('M')] = n.name;
  v[Slot('N')] = n.ns;
  v[Slot('O')] = owner_uid;
  v[Slot('P')] = pod_ip;
  v[Slot('Q')] = resources;
  v[Slot('R')] = rv;
  v[Slot('S')] = placement;
  v[Slot('T')] = changed;
  v[Slot('U')] = uid;
  v[Slot('Z')] = status;
  PodTemplate().Render(out, v);
}

ListPages ScaleCluster::NodeListPages(int page_size) const {
  return Pages(
      "NodeList", node_count(), page_size, list_resource_version(),
      [this](std::string& out, int i) { AppendNode(out, i); },
      [this](int i) { return NodeName(i); });
}

ListPages ScaleCluster::PodListPages(int page_size) const {
  return Pages(
      "PodList", pod_count(), page_size, list_resource_version(),
      [this](std::string& out, int i) { AppendPod(out, i, InitialVersion(i)); },
      [this](int i) {
        PodNames n = NamesOf(i, pods_[static_cast<size_t>(i)], false);
        return n.ns + "/" + n.name;
      });
}

std::vector<std::string> ScaleCluster::WatchBlocks(int count, size_t block_bytes) const {
  int pods = pod_count();
  int bound = 0;
  std::vector<int32_t> node_of(static_cast<size_t>(pods));
  std::vector<uint16_t> restarts(static_cast<size_t>(pods));
  std::array<std::vector<int32_t>, 5> movable;  // by GpuAsk: bound pods asking for one device
  for (int j = 0; j < pods; ++j) {
    const PodShape& p = pods_[static_cast<size_t>(j)];
    node_of[static_cast<size_t>(j)] = p.node;
    if (p.node >= 0) ++bound;
    if (p.node >= 0 && p.ask != GpuAsk::kNone && p.count == 1) {
      movable[static_cast<size_t>(p.ask)].push_back(j);
    }
  }
  std::vector<std::string> blocks;
  std::string block;
  uint64_t rv = list_resource_version();
  auto emit = [&](const char* type, int pod, const PodVersion& version) {
    block += R"({"type":")";
    block += type;
    block += R"(","object":)";
    AppendPod(block, pod, version);
    block += "}\n";
    if (block.size() >= block_bytes) {
      blocks.push_back(std::move(block));
      block.clear();
      block.reserve(block_bytes + 16384);
    }
  };
  auto modified = [&](int j) {
    size_t at = static_cast<size_t>(j);
    emit("MODIFIED", j, {node_of[at], restarts[at], ++rv});
  };
  static constexpr GpuAsk kMoving[] = {GpuAsk::kGpu, GpuAsk::kMig1g, GpuAsk::kMig2g,
                                       GpuAsk::kMig3g};
  block.reserve(block_bytes + 16384);
  for (int e = 0; e < count - 1;) {
    const auto& candidates = movable[static_cast<size_t>(kMoving[(e / 10) % 4])];
    if (e % 10 == 8 && e + 2 < count && candidates.size() >= 2) {
      // Two pods with the same ask trade nodes: both nodes' counts are back after the pair.
      size_t ia = Hash(static_cast<uint64_t>(e), 23) % candidates.size();
      size_t ib = Hash(static_cast<uint64_t>(e), 24) % candidates.size();
      int a = candidates[ia];
      int b = candidates[ib];
      for (size_t tries = 0; node_of[static_cast<size_t>(a)] == node_of[static_cast<size_t>(b)] &&
                             tries < candidates.size();
           ++tries) {
        b = candidates[(ib + tries) % candidates.size()];
      }
      std::swap(node_of[static_cast<size_t>(a)], node_of[static_cast<size_t>(b)]);
      modified(a);
      modified(b);
      e += 2;
      continue;
    }
    int j = static_cast<int>(Hash(static_cast<uint64_t>(e), 22) % static_cast<uint64_t>(bound));
    ++restarts[static_cast<size_t>(j)];
    modified(j);
    ++e;
  }
  emit("ADDED", pods, {0, 0, ++rv});
  if (!block.empty()) blocks.push_back(std::move(block));
  return blocks;
}

}  // namespace gpuadmit::bench
