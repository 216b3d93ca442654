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
std::string QuantityText(JsonView value) {
  return value.is_string() ? std::string(value.string()) : value.Dump();
}

// Moves `swap.from` to `swap.to` in one resource list (limits or requests) of a container.
void SwapInList(JsonView list, const Pointer& at, const ResourceSwap& swap, JsonPatch& patch) {
  JsonView from = list[swap.from];
  if (!from.present()) return;
  patch.Remove(at / swap.from);
  JsonView to = list[swap.to];
  std::string quantity = QuantityText(from);
  if (to.present()) {
    // The container asked for both profiles: it now asks for their sum.
    auto a = ParseWholeQuantity(quantity);
    auto b = ParseWholeQuantity(QuantityText(to));
    if (!a.ok() || !b.ok()) return;
    quantity = std::to_string(a.value() + b.value());
  }
  patch.AddString(at / swap.to, quantity);
}

void SwapInResources(JsonView resources, const Pointer& at, const ResourceSwap& swap,
                     JsonPatch& patch) {
  if (!resources.is_object()) return;
  for (const char* section : {"limits", "requests"}) {
    SwapInList(resources[section], at / section, swap, patch);
  }
}

void SwapInContainers(JsonView spec, const Pointer& spec_at, const char* field,
                      const ResourceSwap& swap, JsonPatch& patch) {
  size_t i = 0;
  for (JsonView c : spec[field].Elements()) {
    SwapInResources(c["resources"], spec_at / field / i++ / "resources", swap, patch);
  }
}

// A custom workload's single container object at spec[field] (OME's `runner`).
void SwapInNamedContainer(JsonView spec, const Pointer& spec_at, const std::string& field,
                          const ResourceSwap& swap, JsonPatch& patch) {
  JsonView c = spec[field];
  if (!c.is_object()) return;
  SwapInResources(c["resources"], spec_at / field / "resources", swap, patch);
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
bool SaysCount(JsonView value, int64_t count) {
  auto n = ParseWholeQuantity(QuantityText(value));
  return n.ok() && n.value() == count;
}

// Sets one container's count (limits, and requests when they name the resource), creating the
// missing resources/limits maps, and makes the same change to `spec` so later steps see it.
void SetCount(json& spec, const Pointer& spec_at, const std::string& gpu_container,
              const CountChange& change, JsonPatch& patch) {
  Pointer at;
  json* c = FindContainer(spec, spec_at, gpu_container, change.container, at);
  if (c == nullptr) return;
  const std::string count = std::to_string(change.count);
  json& resources = (*c)["resources"];
  if (!resources.is_object()) {
    resources = {{"limits", {{change.resource, count}}}};
    patch.Add(at / "resources", resources);
    return;
  }
  json& limits = resources["limits"];
  if (!limits.is_object()) {
    limits = {{change.resource, count}};
    patch.Add(at / "resources" / "limits", limits);
  } else if (!limits.contains(change.resource) ||
             !SaysCount(limits[change.resource], change.count)) {
    limits[change.resource] = count;
    patch.AddString(at / "resources" / "limits" / change.resource, count);
  }
  auto requests = resources.find("requests");
  if (requests != resources.end() && requests->is_object() && requests->contains(change.resource) &&
      !SaysCount((*requests)[change.resource], change.count)) {
    (*requests)[change.resource] = count;
    patch.AddString(at / "resources" / "requests" / change.resource, count);
  }
}

// The spec the swaps read: `spec` itself, or a copy in `counted` with the count changes made
// (their ops appended), so that a count filled in is swapped too.
JsonView WithCounts(JsonView spec, const PodSpecLocation& where,
                    const std::vector<CountChange>& counts, json& counted, JsonPatch& patch) {
  if (counts.empty()) return spec;
  counted = spec.ToJson();
  for (const CountChange& change : counts) {
    SetCount(counted, Pointer(where.spec), where.gpu_container, change, patch);
  }
  return counted;
}

// Adds the decision's nodeSelector entries the spec lacks, creating spec.nodeSelector whole when
// it has none.
void SetNodeSelector(JsonView spec, const Pointer& spec_at, const StringMap& wanted,
                     JsonPatch& patch) {
  if (wanted.empty()) return;
  JsonView existing = spec["nodeSelector"];
  if (!existing.is_object()) {
    std::string map;  // keys in name order, as nlohmann's map wrote them before
    char separator = '{';
    for (const auto& [k, v] : wanted) {
      map += separator;
      separator = ',';
      JsonPatch::AppendString(k, map);
      map += ':';
      JsonPatch::AppendString(v, map);
    }
    map += '}';
    patch.AddText(spec_at / "nodeSelector", map);
    return;
  }
  for (const auto& [k, v] : wanted) {
    JsonView have = existing[k];
    if (!have.is_string() || have.string() != v) {
      patch.AddString(spec_at / "nodeSelector" / k, v);
    }
  }
}

// Adds `gate` to spec.schedulingGates: the whole list when the spec has none, else appended
// when the list lacks it.
void AddSchedulingGate(JsonView spec, const Pointer& spec_at, const std::string& gate,
                       JsonPatch& patch) {
  if (gate.empty()) return;
  json entry = {{"name", gate}};
  JsonView gates = spec["schedulingGates"];
  if (!gates.is_array()) {
    patch.Add(spec_at / "schedulingGates", json::array({entry}));
    return;
  }
  for (JsonView g : gates.Elements()) {
    if (g["name"].string() == gate) return;
  }
  patch.Add(spec_at / "schedulingGates" / "-", std::move(entry));
}

}  // namespace

void SetAnnotations(JsonView object, const std::string& metadata_pointer,
                    const std::vector<std::pair<std::string, std::string>>& annotations,
                    JsonPatch& patch) {
  if (annotations.empty()) return;
  JsonView metadata = object.AtPointer(metadata_pointer);
  const PatchPath metadata_at(metadata_pointer);
  JsonView existing = metadata["annotations"];
  if (existing.is_object()) {
    for (const auto& [k, v] : annotations) {
      JsonView have = existing[k];
      if (!have.is_string() || have.string() != v) {
        patch.AddString(metadata_at / "annotations" / k, v);
      }
    }
    return;
  }
  // No annotations map (or no metadata): create the missing parent whole.
  json added = json::object();
  for (const auto& [k, v] : annotations) added[k] = v;
  if (metadata.is_object()) {
    patch.Add(metadata_at / "annotations", std::move(added));
  } else {
    patch.Add(metadata_at, {{"annotations", std::move(added)}});
  }
}

void AppendPatch(JsonView object, const PodSpecLocation& where, const Decision& decision,
                 JsonPatch& patch) {
  json counted;
  const Pointer spec_at(where.spec);
  JsonView spec = WithCounts(object.AtPointer(where.spec), where, decision.counts, counted, patch);
  for (const ResourceSwap& swap : decision.swaps) {
    SwapInContainers(spec, spec_at, "initContainers", swap, patch);
    SwapInContainers(spec, spec_at, "containers", swap, patch);
    if (!where.gpu_container.empty()) {
      SwapInNamedContainer(spec, spec_at, where.gpu_container, swap, patch);
    }
  }
  SetNodeSelector(spec, spec_at, decision.node_selector, patch);
  AddSchedulingGate(spec, spec_at, decision.scheduling_gate, patch);
  SetAnnotations(object, where.metadata, decision.annotations, patch);
  AppendPlacementPatch(object, where, decision, patch);
}

}  // namespace gpuadmit
