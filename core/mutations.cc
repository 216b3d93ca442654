#include "core/mutations.h"

#include <string>

#include "core/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Pointer = json::json_pointer;

json Op(const char* op, const Pointer& path, json value = nullptr) {
  json o = {{"op", op}, {"path", path.to_string()}};
  if (op != std::string_view("remove")) o["value"] = std::move(value);
  return o;
}

// The quantity text of `value`, as the container wrote it (numbers become strings).
std::string QuantityText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Moves `swap.from` to `swap.to` in one resource list (limits or requests) of a container.
void SwapInList(const json& list, const Pointer& at, const ResourceSwap& swap, json& ops) {
  if (!list.is_object()) return;
  auto from = list.find(swap.from);
  if (from == list.end()) return;
  ops.push_back(Op("remove", at / swap.from));
  auto to = list.find(swap.to);
  std::string quantity = QuantityText(*from);
  if (to != list.end()) {
    // The container asked for both profiles: it now asks for their sum.
    auto a = ParseWholeQuantity(quantity);
    auto b = ParseWholeQuantity(QuantityText(*to));
    if (!a.ok() || !b.ok()) return;
    quantity = std::to_string(a.value() + b.value());
  }
  ops.push_back(Op("add", at / swap.to, quantity));
}

void SwapInContainers(const json& spec, const Pointer& spec_at, const char* field,
                      const ResourceSwap& swap, json& ops) {
  auto containers = spec.find(field);
  if (containers == spec.end() || !containers->is_array()) return;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    auto resources = c.is_object() ? c.find("resources") : c.end();
    if (resources == c.end() || !resources->is_object()) continue;
    Pointer at = spec_at / field / std::to_string(i) / "resources";
    for (const char* section : {"limits", "requests"}) {
      auto list = resources->find(section);
      if (list != resources->end()) SwapInList(*list, at / section, swap, ops);
    }
  }
}

void SetAnnotations(const json& object, const Pointer& metadata_at, const Decision& decision,
                    json& ops) {
  if (decision.annotations.empty()) return;
  const json* metadata = object.contains(metadata_at) ? &object.at(metadata_at) : nullptr;
  const json* existing = nullptr;
  if (metadata != nullptr && metadata->is_object()) {
    auto it = metadata->find("annotations");
    if (it != metadata->end() && it->is_object()) existing = &*it;
  }
  if (existing != nullptr) {
    for (const auto& [k, v] : decision.annotations) {
      auto it = existing->find(k);
      if (it == existing->end() || !it->is_string() || *it != v) {
        ops.push_back(Op("add", metadata_at / "annotations" / k, v));
      }
    }
    return;
  }
  // No annotations map (or no metadata): create the missing parent whole.
  json annotations = json::object();
  for (const auto& [k, v] : decision.annotations) annotations[k] = v;
  if (metadata != nullptr && metadata->is_object()) {
    ops.push_back(Op("add", metadata_at / "annotations", std::move(annotations)));
  } else {
    ops.push_back(Op("add", metadata_at, {{"annotations", std::move(annotations)}}));
  }
}

}  // namespace

void AppendPatch(const json& object, const PodSpecLocation& where, const Decision& decision,
                 json& ops) {
  const json& spec = object.at(where.spec);
  for (const ResourceSwap& swap : decision.swaps) {
    SwapInContainers(spec, where.spec, "initContainers", swap, ops);
    SwapInContainers(spec, where.spec, "containers", swap, ops);
  }
  SetAnnotations(object, where.metadata, decision, ops);
}

}  // namespace gpuadmit
