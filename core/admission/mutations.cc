#include "core/admission/mutations.h"

#include <string>

#include "core/admission/patch_path.h"
#include "core/admission/placement_patch.h"
#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = PatchPath;

// The quantity text of `value`, as the container wrote it (numbers become strings).
std::string QuantityText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Moves `swap.from` to `swap.to` in one resource list (limits or requests) of a container.
void SwapInList(const json& list, const Pointer& at, const ResourceSwap& swap, json& ops) {
  if (!list.is_object()) return;
  auto from = list.find(swap.from);
  if (from == list.end()) return;
  ops.push_back(PatchOperation("remove", at / swap.from));
  auto to = list.find(swap.to);
  std::string quantity = QuantityText(*from);
  if (to != list.end()) {
    // The container asked for both profiles: it now asks for their sum.
    auto a = ParseWholeQuantity(quantity);
    auto b = ParseWholeQuantity(QuantityText(*to));
    if (!a.ok() || !b.ok()) return;
    quantity = std::to_string(a.value() + b.value());
  }
  ops.push_back(PatchOperation("add", at / swap.to, quantity));
}

void SwapInContainers(const json& spec, const Pointer& spec_at, const char* field,
                      const ResourceSwap& swap, json& ops) {
  auto containers = spec.find(field);
  if (containers == spec.end() || !containers->is_array()) return;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    auto resources = c.is_object() ? c.find("resources") : c.end();
    if (resources == c.end() || !resources->is_object()) continue;
    Pointer at = spec_at / field / i / "resources";
    for (const char* section : {"limits", "requests"}) {
      auto list = resources->find(section);
      if (list != resources->end()) SwapInList(*list, at / section, swap, ops);
    }
  }
}

// A custom workload's single container object at spec[field] (OME's `runner`).
void SwapInNamedContainer(const json& spec, const Pointer& spec_at, const std::string& field,
                          const ResourceSwap& swap, json& ops) {
  auto c = spec.find(field);
  if (c == spec.end() || !c->is_object()) return;
  auto resources = c->find("resources");
  if (resources == c->end() || !resources->is_object()) return;
  Pointer at = spec_at / field / "resources";
  for (const char* section : {"limits", "requests"}) {
    auto list = resources->find(section);
    if (list != resources->end()) SwapInList(*list, at / section, swap, ops);
  }
}

// The container named `name` in `spec` and where it is: an init or app container, or the
// custom workload's single container at spec[gpu_container]; nullptr when none is.
json* FindContainer(json& spec, const Pointer& spec_at, const std::string& gpu_container,
                    const std::string& name, Pointer& at) {
  for (const char* field : {"initContainers", "containers"}) {
    auto list = spec.find(field);
    if (list == spec.end() || !list->is_array()) continue;
    for (size_t i = 0; i < list->size(); ++i) {
      json& c = (*list)[i];
      if (c.is_object() && c.value("name", std::string()) == name) {
        at = spec_at / field / i;
        return &c;
      }
    }
  }
  if (!gpu_container.empty()) {
    auto c = spec.find(gpu_container);
    if (c != spec.end() && c->is_object() && c->value("name", std::string()) == name) {
      at = spec_at / gpu_container;
      return &*c;
    }
  }
  return nullptr;
}

// True when `value` is a quantity of exactly `count` devices.
bool SaysCount(const json& value, int64_t count) {
  auto n = ParseWholeQuantity(QuantityText(value));
  return n.ok() && n.value() == count;
}

// Sets one container's count (limits, and requests when they name the resource), creating the
// missing resources/limits maps, and makes the same change to `spec` so later steps see it.
void SetCount(json& spec, const Pointer& spec_at, const std::string& gpu_container,
              const CountChange& change, json& ops) {
  Pointer at;
  json* c = FindContainer(spec, spec_at, gpu_container, change.container, at);
  if (c == nullptr) return;
  const std::string count = std::to_string(change.count);
  json& resources = (*c)["resources"];
  if (!resources.is_object()) {
    resources = {{"limits", {{change.resource, count}}}};
    ops.push_back(PatchOperation("add", at / "resources", resources));
    return;
  }
  json& limits = resources["limits"];
  if (!limits.is_object()) {
    limits = {{change.resource, count}};
    ops.push_back(PatchOperation("add", at / "resources" / "limits", limits));
  } else if (!limits.contains(change.resource) ||
             !SaysCount(limits[change.resource], change.count)) {
    limits[change.resource] = count;
    ops.push_back(PatchOperation("add", at / "resources" / "limits" / change.resource, count));
  }
  auto requests = resources.find("requests");
  if (requests != resources.end() && requests->is_object() && requests->contains(change.resource) &&
      !SaysCount((*requests)[change.resource], change.count)) {
    (*requests)[change.resource] = count;
    ops.push_back(PatchOperation("add", at / "resources" / "requests" / change.resource, count));
  }
}

// The spec the swaps read: `spec` itself, or a copy in `counted` with the count changes made
// (their ops appended), so that a count filled in is swapped too.
const json& WithCounts(const json& spec, const PodSpecLocation& where,
                       const std::vector<CountChange>& counts, json& counted, json& ops) {
  if (counts.empty()) return spec;
  counted = spec;
  for (const CountChange& change : counts) {
    SetCount(counted, Pointer(where.spec), where.gpu_container, change, ops);
  }
  return counted;
}

// Adds the decision's nodeSelector entries the spec lacks, creating spec.nodeSelector whole when
// it has none.
void SetNodeSelector(const json& spec, const Pointer& spec_at, const StringMap& wanted, json& ops) {
  if (wanted.empty()) return;
  auto existing = spec.find("nodeSelector");
  if (existing == spec.end() || !existing->is_object()) {
    json map = json::object();
    for (const auto& [k, v] : wanted) map[k] = v;
    ops.push_back(PatchOperation("add", spec_at / "nodeSelector", std::move(map)));
    return;
  }
  for (const auto& [k, v] : wanted) {
    auto it = existing->find(k);
    if (it == existing->end() || !it->is_string() || *it != v) {
      ops.push_back(PatchOperation("add", spec_at / "nodeSelector" / k, v));
    }
  }
}

void SetAnnotations(const json& object, const json::json_pointer& metadata_pointer,
                    const Decision& decision, json& ops) {
  if (decision.annotations.empty()) return;
  const json* metadata = object.contains(metadata_pointer) ? &object.at(metadata_pointer) : nullptr;
  const Pointer metadata_at(metadata_pointer);
  const json* existing = nullptr;
  if (metadata != nullptr && metadata->is_object()) {
    auto it = metadata->find("annotations");
    if (it != metadata->end() && it->is_object()) existing = &*it;
  }
  if (existing != nullptr) {
    for (const auto& [k, v] : decision.annotations) {
      auto it = existing->find(k);
      if (it == existing->end() || !it->is_string() || *it != v) {
        ops.push_back(PatchOperation("add", metadata_at / "annotations" / k, v));
      }
    }
    return;
  }
  // No annotations map (or no metadata): create the missing parent whole.
  json annotations = json::object();
  for (const auto& [k, v] : decision.annotations) annotations[k] = v;
  if (metadata != nullptr && metadata->is_object()) {
    ops.push_back(PatchOperation("add", metadata_at / "annotations", std::move(annotations)));
  } else {
    ops.push_back(PatchOperation("add", metadata_at, {{"annotations", std::move(annotations)}}));
  }
}

// Adds `gate` to spec.schedulingGates: the whole list when the spec has none, else appended
// when the list lacks it.
void AddSchedulingGate(const json& spec, const Pointer& spec_at, const std::string& gate,
                       json& ops) {
  if (gate.empty()) return;
  json entry = {{"name", gate}};
  auto gates = spec.find("schedulingGates");
  if (gates == spec.end() || !gates->is_array()) {
    ops.push_back(PatchOperation("add", spec_at / "schedulingGates", json::array({entry})));
    return;
  }
  for (const json& g : *gates) {
    if (g.is_object() && g.value("name", std::string()) == gate) return;
  }
  ops.push_back(PatchOperation("add", spec_at / "schedulingGates" / "-", std::move(entry)));
}

}  // namespace

void AppendPatch(const json& object, const PodSpecLocation& where, const Decision& decision,
                 json& ops) {
  json counted;
  const Pointer spec_at(where.spec);
  const json& spec = WithCounts(object.at(where.spec), where, decision.counts, counted, ops);
  for (const ResourceSwap& swap : decision.swaps) {
    SwapInContainers(spec, spec_at, "initContainers", swap, ops);
    SwapInContainers(spec, spec_at, "containers", swap, ops);
    if (!where.gpu_container.empty()) {
      SwapInNamedContainer(spec, spec_at, where.gpu_container, swap, ops);
    }
  }
  SetNodeSelector(spec, spec_at, decision.node_selector, ops);
  AddSchedulingGate(spec, spec_at, decision.scheduling_gate, ops);
  SetAnnotations(object, where.metadata, decision, ops);
  AppendPlacementPatch(object, where, decision, ops);
}

}  // namespace gpuadmit
