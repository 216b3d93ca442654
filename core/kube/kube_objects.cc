#include "core/kube/kube_objects.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/json/json_fields.h"
#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// The single node a pending pod is pinned to: nodeSelector on kubernetes.io/hostname, or a
// required affinity term "kubernetes.io/hostname In [one]" (what DaemonSets and most pinning use).
std::string WantedNode(const json& spec) {
  std::string by_selector = StringAt(spec, {"nodeSelector", "kubernetes.io/hostname"});
  if (!by_selector.empty()) return by_selector;
  const json& terms =
      At(spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms"});
  if (!terms.is_array() || terms.size() != 1) return "";
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    const json& expressions = At(terms[0], {kind});
    if (!expressions.is_array()) continue;
    for (const json& e : expressions) {
      std::string key = StringAt(e, {"key"});
      bool host = key == "kubernetes.io/hostname" || key == "metadata.name";
      const json& values = At(e, {"values"});
      if (host && StringAt(e, {"operator"}) == "In" && values.is_array() && values.size() == 1) {
        return StringAt(values[0], {});
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

NodeFacts ReadNode(const json& node) {
  NodeFacts n;
  const json& metadata = At(node, {"metadata"});
  n.name = StringAt(metadata, {"name"});
  if (const json& labels = At(metadata, {"labels"}); labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (v.is_string()) n.labels.emplace(k, v.get<std::string>());
    }
  }
  n.gpu = ReadGpuFacts(n.labels);
  n.product = n.gpu.product;
  const json& spec = At(node, {"spec"});
  n.unschedulable = At(spec, {"unschedulable"}).is_boolean() && At(spec, {"unschedulable"});
  if (const json& taints = At(spec, {"taints"}); taints.is_array()) {
    for (const json& t : taints) {
      n.taints.push_back({StringAt(t, {"key"}), StringAt(t, {"value"}), StringAt(t, {"effect"})});
    }
  }
  const json& status = At(node, {"status"});
  if (const json& allocatable = At(status, {"allocatable"}); allocatable.is_object()) {
    for (const auto& [resource, quantity] : allocatable.items()) {
      if ((resource == "cpu" || resource == "memory") && quantity.is_string()) {
        if (auto milli = ParseQuantityMilli(quantity.get_ref<const std::string&>()); milli.ok()) {
          if (resource == "cpu") n.compute.cpu_milli = milli.value();
          if (resource == "memory") n.compute.memory_bytes = milli.value() / 1000;
        }
        continue;
      }
      if (!IsManagedResource(resource) || !quantity.is_string()) continue;
      if (auto count = ParseWholeQuantity(quantity.get_ref<const std::string&>()); count.ok()) {
        n.allocatable[resource] = count.value();
      }
    }
  }
  if (const json& conditions = At(status, {"conditions"}); conditions.is_array()) {
    for (const json& c : conditions) {
      if (StringAt(c, {"type"}) == "Ready") n.ready = StringAt(c, {"status"}) == "True";
    }
  }
  return n;
}

std::string ObjectKey(const json& object) {
  const json& metadata = At(object, {"metadata"});
  return StringAt(metadata, {"namespace"}) + "/" + StringAt(metadata, {"name"});
}

int32_t PodPriority(const json& pod_spec) {
  const json& value = At(pod_spec, {"priority"});
  using Limits = std::numeric_limits<int32_t>;
  if (value.is_number_unsigned()) {
    uint64_t n = value.get<uint64_t>();
    return n <= static_cast<uint64_t>(Limits::max()) ? static_cast<int32_t>(n) : 0;
  }
  if (!value.is_number_integer()) return 0;
  int64_t n = value.get<int64_t>();
  return n >= Limits::min() && n <= Limits::max() ? static_cast<int32_t>(n) : 0;
}

PodRecord ReadPod(const json& pod, std::string_view reservation_annotation) {
  PodRecord p;
  p.key = ObjectKey(pod);
  const json& spec = At(pod, {"spec"});
  p.node = StringAt(spec, {"nodeName"});
  if (p.node.empty()) p.wanted_node = WantedNode(spec);
  std::string phase = StringAt(pod, {"status", "phase"});
  p.terminal = phase == "Succeeded" || phase == "Failed";
  PodRequirements requirements = ReadPodRequirements(spec);
  p.need = std::move(requirements.effective);
  p.compute = requirements.compute;
  p.reservation = StringAt(pod, {"metadata", "annotations", reservation_annotation});
  if (!p.node.empty() || p.terminal || p.need.empty()) return p;
  auto queued = std::make_shared<QueuedFacts>();
  queued->created = StringAt(pod, {"metadata", "creationTimestamp"});
  queued->preferred_node = PreferredHostname(spec);
  queued->constraints = ReadSchedulingConstraints(spec);
  if (const json& conditions = At(pod, {"status", "conditions"}); conditions.is_array()) {
    queued->unschedulable = std::any_of(conditions.begin(), conditions.end(), [](const json& c) {
      return StringAt(c, {"reason"}) == "Unschedulable";
    });
  }
  if (const json& gates = At(spec, {"schedulingGates"}); gates.is_array()) {
    for (const json& g : gates) {
      std::string name = StringAt(g, {"name"});
      if (!name.empty()) queued->scheduling_gates.push_back(std::move(name));
    }
  }
  queued->priority = PodPriority(spec);
  p.queued = std::move(queued);
  return p;
}

// Function-local statics: built once, immutable, so they are constants rather than state.
const FieldTrie& NodeFields() {
  static const FieldTrie trie = FieldTrie::FromPatterns(
      {"metadata.name", "metadata.namespace", "metadata.resourceVersion", "metadata.labels.**",
       "spec.unschedulable", "spec.taints.**", "status.allocatable.**", "status.conditions.*.type",
       "status.conditions.*.status"});
  return trie;
}

const FieldTrie& PodFields() {
  static const FieldTrie trie = FieldTrie::FromPatterns(
      {"metadata.name", "metadata.namespace", "metadata.resourceVersion", "metadata.annotations.**",
       "metadata.creationTimestamp", "spec.nodeName", "spec.overhead.**", "spec.nodeSelector.**",
       "spec.affinity.nodeAffinity.**", "spec.tolerations.**", "spec.containers.*.name",
       "spec.containers.*.resources.**", "spec.initContainers.*.name",
       "spec.initContainers.*.restartPolicy", "spec.initContainers.*.resources.**",
       "spec.schedulingGates.*.name", "spec.priority", "status.phase",
       "status.conditions.*.reason"});
  return trie;
}

namespace {

FieldTrie ListOf(const FieldTrie& item) {
  FieldTrie trie = FieldTrie::FromPatterns(
      {"kind", "metadata.resourceVersion", "metadata.continue", "metadata.remainingItemCount"});
  trie.Attach("items.*", &item);
  return trie;
}

// A WatchEvent: {"type": ..., "object": ...}; an ERROR or BOOKMARK object is a Status or a
// bare object with metadata.resourceVersion, both of which the item trie's metadata covers, plus
// the Status fields.
FieldTrie EventOf(const FieldTrie& object) {
  FieldTrie trie = FieldTrie::FromPatterns({"type"});
  trie.Attach("object", &object);
  return trie;
}

// A watch event's object: the kind's own fields, or those of the Status an ERROR event carries.
FieldTrie ObjectOrStatus(const FieldTrie& kind) {
  FieldTrie t = FieldTrie::FromPatterns({"kind", "code", "reason", "message"});
  for (const char* part : {"metadata", "spec", "status"}) t.Attach(part, kind.Child(part));
  return t;
}

}  // namespace

const FieldTrie& NodeListFields() {
  static const FieldTrie trie = ListOf(NodeFields());
  return trie;
}

const FieldTrie& PodListFields() {
  static const FieldTrie trie = ListOf(PodFields());
  return trie;
}

const FieldTrie& NodeEventFields() {
  static const FieldTrie object = ObjectOrStatus(NodeFields());
  static const FieldTrie trie = EventOf(object);
  return trie;
}

const FieldTrie& PodEventFields() {
  static const FieldTrie object = ObjectOrStatus(PodFields());
  static const FieldTrie trie = EventOf(object);
  return trie;
}

}  // namespace gpuadmit
