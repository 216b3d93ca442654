#include "core/kube/kube_objects.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

// The single node a pending pod is pinned to: nodeSelector on kubernetes.io/hostname, or a
// required affinity term "kubernetes.io/hostname In [one]" (what DaemonSets and most pinning use).
std::string WantedNode(JsonView spec) {
  std::string_view by_selector = spec.At({"nodeSelector", "kubernetes.io/hostname"}).string();
  if (!by_selector.empty()) return std::string(by_selector);
  JsonView terms = spec.At({"affinity", "nodeAffinity",
                            "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (terms.size() != 1) return "";
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    for (JsonView e : terms[0][kind].Elements()) {
      std::string_view key = e["key"].string();
      bool host = key == "kubernetes.io/hostname" || key == "metadata.name";
      JsonView values = e["values"];
      if (host && e["operator"].string() == "In" && values.size() == 1) {
        return std::string(values[0].string());
      }
    }
  }
  return "";
}

int64_t Number(const std::map<std::string, std::string, std::less<>>& labels,
               std::string_view key) {
  auto it = labels.find(key);
  if (it == labels.end()) return 0;
  auto n = ParseWholeQuantity(it->second);
  return n.ok() ? n.value() : 0;
}

std::string Label(const std::map<std::string, std::string, std::less<>>& labels,
                  std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

GpuFacts ReadGpuFacts(const std::map<std::string, std::string, std::less<>>& labels) {
  GpuFacts g;
  g.product = Label(labels, "nvidia.com/gpu.product");
  g.memory_mib = Number(labels, "nvidia.com/gpu.memory");
  g.count = Number(labels, "nvidia.com/gpu.count");
  g.mig_strategy = Label(labels, "nvidia.com/mig.strategy");
  g.mig_capable = Label(labels, "nvidia.com/mig.capable") == "true";
  g.sharing_strategy = Label(labels, "nvidia.com/gpu.sharing-strategy");
  g.mps_capable = Label(labels, "nvidia.com/mps.capable") == "true";
  // "nvidia.com/mig-1g.10gb.count" -> the resource "nvidia.com/mig-1g.10gb".
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  constexpr std::string_view kSuffix = ".count";
  for (auto it = labels.lower_bound(kPrefix); it != labels.end() && it->first.starts_with(kPrefix);
       ++it) {
    if (it->first.ends_with(kSuffix)) {
      g.mig_counts[it->first.substr(0, it->first.size() - kSuffix.size())] =
          Number(labels, it->first);
    }
  }
  return g;
}

}  // namespace

NodeFacts ReadNode(JsonView node) {
  NodeFacts n;
  JsonView metadata = node["metadata"];
  n.name = metadata["name"].string();
  for (const JsonView::Member& label : metadata["labels"].Members()) {
    if (label.value.is_string()) n.labels.emplace(label.key, label.value.string());
  }
  n.gpu = ReadGpuFacts(n.labels);
  n.product = n.gpu.product;
  JsonView spec = node["spec"];
  n.unschedulable = spec["unschedulable"].boolean();
  for (JsonView t : spec["taints"].Elements()) {
    n.taints.push_back({std::string(t["key"].string()), std::string(t["value"].string()),
                        std::string(t["effect"].string())});
  }
  JsonView status = node["status"];
  for (const auto& [resource, quantity] : status["allocatable"].Members()) {
    if (!quantity.is_string()) continue;
    if (resource == "cpu" || resource == "memory") {
      if (auto milli = ParseQuantityMilli(quantity.string()); milli.ok()) {
        if (resource == "cpu") n.compute.cpu_milli = milli.value();
        if (resource == "memory") n.compute.memory_bytes = milli.value() / 1000;
      }
      continue;
    }
    if (!IsManagedResource(resource)) continue;
    if (auto count = ParseWholeQuantity(quantity.string()); count.ok()) {
      n.allocatable[std::string(resource)] = count.value();
    }
  }
  for (JsonView c : status["conditions"].Elements()) {
    if (c["type"].string() == "Ready") n.ready = c["status"].string() == "True";
  }
  return n;
}

std::string ObjectKey(JsonView object) {
  auto [name_space, name] = object["metadata"].Fields({"namespace", "name"});
  std::string key(name_space.string());
  key += '/';
  key += name.string();
  return key;
}

int32_t PodPriority(JsonView pod_spec) {
  int64_t n = pod_spec["priority"].integer();
  using Limits = std::numeric_limits<int32_t>;
  return n >= Limits::min() && n <= Limits::max() ? static_cast<int32_t>(n) : 0;
}

PodRecord ReadPod(JsonView pod, std::string_view reservation_annotation) {
  PodRecord p;
  p.key = ObjectKey(pod);
  auto [metadata, spec, status] = pod.Fields({"metadata", "spec", "status"});
  p.node = spec["nodeName"].string();
  if (p.node.empty()) p.wanted_node = WantedNode(spec);
  std::string_view phase = status["phase"].string();
  p.terminal = phase == "Succeeded" || phase == "Failed";
  PodRequirements requirements = ReadPodRequirements(spec);
  p.need = std::move(requirements.effective);
  p.compute = requirements.compute;
  p.reservation = metadata.At({"annotations", reservation_annotation}).string();
  p.names_claims = spec["resourceClaims"].size() > 0;
  // A pod naming DRA claims keeps its facts too: whether it waits for them (cluster_state.h).
  if (p.terminal || (p.need.empty() && !p.names_claims)) return p;
  if (!p.need.empty()) p.gpu_products = GpuProductsOf(spec);
  if (!p.node.empty()) return p;
  auto queued = std::make_shared<QueuedFacts>();
  queued->created = metadata["creationTimestamp"].string();
  queued->preferred_node = PreferredHostname(spec);
  queued->constraints = ReadSchedulingConstraints(spec);
  for (JsonView c : status["conditions"].Elements()) {
    if (c["reason"].string() == "Unschedulable") queued->unschedulable = true;
  }
  for (JsonView g : spec["schedulingGates"].Elements()) {
    std::string_view name = g["name"].string();
    if (!name.empty()) queued->scheduling_gates.emplace_back(name);
  }
  queued->priority = PodPriority(spec);
  p.queued = std::move(queued);
  return p;
}

}  // namespace gpuadmit
