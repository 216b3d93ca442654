#include "core/kube/requirements.h"

#include <algorithm>

#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

void ReadList(const json& list, std::string_view where, ResourceList& out,
              std::vector<std::string>& warnings) {
  if (!list.is_object()) return;
  for (const auto& [resource, quantity] : list.items()) {
    if (!IsManagedResource(resource)) continue;
    if (!quantity.is_string() && !quantity.is_number_integer()) {
      warnings.push_back(std::string(where) + " " + resource + " is not a quantity");
      continue;
    }
    auto n = quantity.is_string() ? ParseWholeQuantity(quantity.get_ref<const std::string&>())
                                  : ParseWholeQuantity(std::to_string(quantity.get<int64_t>()));
    if (!n.ok()) {
      warnings.push_back(std::string(where) + " " + resource + ": " + n.error().message);
      continue;
    }
    out[resource] = n.value();
  }
}

void ReadContainer(const json& c, std::string_view field, size_t index, ContainerRole role,
                   PodRequirements& out) {
  ContainerNeeds needs;
  needs.field = std::string(field);
  needs.index = index;
  needs.role = role;
  if (auto name = c.find("name"); name != c.end() && name->is_string()) needs.name = *name;
  std::string where = std::string("container \"") + needs.name + "\"";
  if (auto res = c.find("resources"); res != c.end() && res->is_object()) {
    if (auto l = res->find("limits"); l != res->end())
      ReadList(*l, where, needs.limits, out.warnings);
    if (auto r = res->find("requests"); r != res->end()) {
      ReadList(*r, where, needs.requests, out.warnings);
    }
  }
  out.containers.push_back(std::move(needs));
}

void ReadContainers(const json& spec, const char* field, bool init, PodRequirements& out) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return;
  if (!it->is_array()) {
    out.warnings.push_back(std::string("spec.") + field + " is not a list");
    return;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& c = (*it)[i];
    if (!c.is_object()) {
      out.warnings.push_back(std::string("spec.") + field + "[" + std::to_string(i) +
                             "] is not an object");
      continue;
    }
    ContainerRole role = ContainerRole::kApp;
    if (init) {
      auto policy = c.find("restartPolicy");
      bool sidecar = policy != c.end() && policy->is_string() && *policy == "Always";
      role = sidecar ? ContainerRole::kSidecar : ContainerRole::kInit;
    }
    ReadContainer(c, field, i, role, out);
  }
}

// A custom workload's single GPU container (OME's `runner`): an app container.
void ReadNamedContainer(const json& spec, std::string_view field, PodRequirements& out) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return;
  if (!it->is_object()) {
    out.warnings.push_back("spec." + std::string(field) + " is not an object");
    return;
  }
  ReadContainer(*it, field, 0, ContainerRole::kApp, out);
}

// A container's cpu (milli) and memory (bytes) limits and requests, as "cpu" and "memory";
// unreadable quantities are left out (the apiserver rejects them).
ContainerNeeds ComputeOf(const json& c, ContainerRole role) {
  ContainerNeeds needs;
  needs.role = role;
  auto res = c.find("resources");
  if (res == c.end() || !res->is_object()) return needs;
  for (auto [part, list] : {std::pair{"limits", &needs.limits}, {"requests", &needs.requests}}) {
    auto l = res->find(part);
    if (l == res->end() || !l->is_object()) continue;
    for (const char* resource : {"cpu", "memory"}) {
      auto q = l->find(resource);
      if (q == l->end() || (!q->is_string() && !q->is_number())) continue;
      auto milli =
          ParseQuantityMilli(q->is_string() ? q->get_ref<const std::string&>() : q->dump());
      if (!milli.ok()) continue;
      (*list)[resource] = resource[0] == 'c' ? milli.value() : milli.value() / 1000;
    }
  }
  return needs;
}

ComputeRequest ReadCompute(const json& spec, std::string_view gpu_container) {
  std::vector<ContainerNeeds> containers;
  for (const char* field : {"initContainers", "containers"}) {
    auto it = spec.find(field);
    if (it == spec.end() || !it->is_array()) continue;
    for (const json& c : *it) {
      if (!c.is_object()) continue;
      ContainerRole role = ContainerRole::kApp;
      if (field[0] == 'i') {
        auto policy = c.find("restartPolicy");
        bool sidecar = policy != c.end() && policy->is_string() && *policy == "Always";
        role = sidecar ? ContainerRole::kSidecar : ContainerRole::kInit;
      }
      containers.push_back(ComputeOf(c, role));
    }
  }
  if (!gpu_container.empty()) {
    auto it = spec.find(gpu_container);
    if (it != spec.end() && it->is_object())
      containers.push_back(ComputeOf(*it, ContainerRole::kApp));
  }
  ResourceList overhead;
  if (auto it = spec.find("overhead"); it != spec.end() && it->is_object()) {
    overhead = ComputeOf({{"resources", {{"requests", *it}}}}, ContainerRole::kApp).requests;
  }
  ResourceList effective = EffectiveRequest(containers, overhead);
  return {Get(effective, "cpu"), Get(effective, "memory")};
}

void AddInto(ResourceList& sum, const ResourceList& add) {
  for (const auto& [r, n] : add) sum[r] += n;
}

void MaxInto(ResourceList& max, const ResourceList& other) {
  for (const auto& [r, n] : other) max[r] = std::max(Get(max, r), n);
}

}  // namespace

const json& ContainerObject(const json& pod_spec, const ContainerNeeds& c) {
  // A constant, not state: the null a missing container reads as.
  static const json kNone;
  if (!pod_spec.is_object()) return kNone;
  auto field = pod_spec.find(c.field);
  if (field == pod_spec.end()) return kNone;
  if (field->is_object()) return *field;  // a custom workload's single container (OME's runner)
  return field->is_array() && c.index < field->size() ? (*field)[c.index] : kNone;
}

int64_t Get(const ResourceList& list, std::string_view resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second;
}

bool IsManagedResource(std::string_view resource) { return resource.starts_with("nvidia.com/"); }

ResourceList ContainerNeeds::Effective() const {
  ResourceList out = limits;
  for (const auto& [r, n] : requests) out[r] = n;
  return out;
}

PodRequirements ReadPodRequirements(const json& pod_spec, std::string_view gpu_container) {
  PodRequirements out;
  if (!pod_spec.is_object()) return out;
  ReadContainers(pod_spec, "initContainers", true, out);
  ReadContainers(pod_spec, "containers", false, out);
  if (!gpu_container.empty()) ReadNamedContainer(pod_spec, gpu_container, out);
  if (auto it = pod_spec.find("overhead"); it != pod_spec.end()) {
    ReadList(*it, "overhead", out.overhead, out.warnings);
  }
  out.effective = EffectiveRequest(out.containers, out.overhead);
  out.compute = ReadCompute(pod_spec, gpu_container);
  return out;
}

ResourceList EffectiveRequest(const std::vector<ContainerNeeds>& containers,
                              const ResourceList& overhead) {
  ResourceList init_max;
  ResourceList sidecars;
  ResourceList apps;
  for (const ContainerNeeds& c : containers) {
    ResourceList need = c.Effective();
    switch (c.role) {
      case ContainerRole::kInit: {
        // A plain init container runs alongside the sidecars started before it.
        ResourceList with_sidecars = sidecars;
        AddInto(with_sidecars, need);
        MaxInto(init_max, with_sidecars);
        break;
      }
      case ContainerRole::kSidecar:
        AddInto(sidecars, need);
        MaxInto(init_max, sidecars);
        break;
      case ContainerRole::kApp:
        AddInto(apps, need);
        break;
    }
  }
  AddInto(apps, sidecars);
  MaxInto(apps, init_max);
  AddInto(apps, overhead);
  std::erase_if(apps, [](const auto& entry) { return entry.second == 0; });
  return apps;
}

}  // namespace gpuadmit
