#include "core/kube/requirements.h"

#include <algorithm>

#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

void ReadList(JsonView list, std::string_view where, ResourceList& out,
              std::vector<std::string>& warnings) {
  for (const auto& [resource, quantity] : list.Members()) {
    if (!IsManagedResource(resource)) continue;
    if (!quantity.is_string() && !quantity.is_number_integer()) {
      warnings.push_back(std::string(where) + " " + std::string(resource) + " is not a quantity");
      continue;
    }
    auto n = quantity.is_string() ? ParseWholeQuantity(quantity.string())
                                  : ParseWholeQuantity(std::to_string(quantity.integer()));
    if (!n.ok()) {
      warnings.push_back(std::string(where) + " " + std::string(resource) + ": " +
                         n.error().message);
      continue;
    }
    out[std::string(resource)] = n.value();
  }
}

void ReadContainer(JsonView c, std::string_view field, size_t index, ContainerRole role,
                   PodRequirements& out) {
  ContainerNeeds needs;
  needs.field = std::string(field);
  needs.index = index;
  needs.role = role;
  needs.name = std::string(c["name"].string());
  std::string where = std::string("container \"") + needs.name + "\"";
  if (JsonView res = c["resources"]; res.is_object()) {
    ReadList(res["limits"], where, needs.limits, out.warnings);
    ReadList(res["requests"], where, needs.requests, out.warnings);
  }
  out.containers.push_back(std::move(needs));
}

// An init container with restartPolicy Always is a sidecar.
ContainerRole RoleOf(JsonView c, bool init) {
  if (!init) return ContainerRole::kApp;
  return c["restartPolicy"].string() == "Always" ? ContainerRole::kSidecar : ContainerRole::kInit;
}

void ReadContainers(JsonView spec, const char* field, bool init, PodRequirements& out) {
  JsonView list = spec[field];
  if (list.is_null()) return;
  if (!list.is_array()) {
    out.warnings.push_back(std::string("spec.") + field + " is not a list");
    return;
  }
  size_t i = 0;
  for (JsonView c : list.Elements()) {
    if (!c.is_object()) {
      out.warnings.push_back(std::string("spec.") + field + "[" + std::to_string(i) +
                             "] is not an object");
    } else {
      ReadContainer(c, field, i, RoleOf(c, init), out);
    }
    ++i;
  }
}

// A custom workload's single GPU container (OME's `runner`): an app container.
void ReadNamedContainer(JsonView spec, std::string_view field, PodRequirements& out) {
  JsonView c = spec[field];
  if (c.is_null()) return;
  if (!c.is_object()) {
    out.warnings.push_back("spec." + std::string(field) + " is not an object");
    return;
  }
  ReadContainer(c, field, 0, ContainerRole::kApp, out);
}

// The cpu (milli) and memory (bytes) of one resource list, as "cpu" and "memory"; unreadable
// quantities are left out (the apiserver rejects them).
void ReadComputeList(JsonView list, ResourceList& out) {
  if (!list.is_object()) return;
  for (const char* resource : {"cpu", "memory"}) {
    JsonView q = list[resource];
    if (!q.is_string() && !q.is_number()) continue;
    auto milli = q.is_string() ? ParseQuantityMilli(q.string()) : ParseQuantityMilli(q.Dump());
    if (!milli.ok()) continue;
    out[resource] = resource[0] == 'c' ? milli.value() : milli.value() / 1000;
  }
}

// A container's cpu and memory limits and requests.
ContainerNeeds ComputeOf(JsonView c, ContainerRole role) {
  ContainerNeeds needs;
  needs.role = role;
  JsonView res = c["resources"];
  if (!res.is_object()) return needs;
  ReadComputeList(res["limits"], needs.limits);
  ReadComputeList(res["requests"], needs.requests);
  return needs;
}

ComputeRequest ReadCompute(JsonView spec, std::string_view gpu_container) {
  std::vector<ContainerNeeds> containers;
  for (const char* field : {"initContainers", "containers"}) {
    for (JsonView c : spec[field].Elements()) {
      if (c.is_object()) containers.push_back(ComputeOf(c, RoleOf(c, field[0] == 'i')));
    }
  }
  if (!gpu_container.empty()) {
    JsonView c = spec[gpu_container];
    if (c.is_object()) containers.push_back(ComputeOf(c, ContainerRole::kApp));
  }
  ResourceList overhead;
  ReadComputeList(spec["overhead"], overhead);
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

JsonView ContainerObject(JsonView pod_spec, const ContainerNeeds& c) {
  JsonView field = pod_spec[c.field];
  if (field.is_object()) return field;  // a custom workload's single container (OME's runner)
  return field[c.index];
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

PodRequirements ReadPodRequirements(JsonView pod_spec, std::string_view gpu_container) {
  PodRequirements out;
  if (!pod_spec.is_object()) return out;
  ReadContainers(pod_spec, "initContainers", true, out);
  ReadContainers(pod_spec, "containers", false, out);
  if (!gpu_container.empty()) ReadNamedContainer(pod_spec, gpu_container, out);
  ReadList(pod_spec["overhead"], "overhead", out.overhead, out.warnings);
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
