#include "core/kube/requirements.h"

#include <algorithm>
#include <array>
#include <optional>

#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

// cpu or memory as the scheduler counts it (milli-CPUs, bytes); nullopt when unreadable.
std::optional<int64_t> ComputeQuantity(std::string_view resource, JsonView q) {
  if (!q.is_string() && !q.is_number()) return std::nullopt;
  auto milli = q.is_string() ? ParseQuantityMilli(q.string()) : ParseQuantityMilli(q.Dump());
  if (!milli.ok()) return std::nullopt;
  return resource[0] == 'c' ? milli.value() : milli.value() / 1000;
}

// Whose list a warning is about: `container "name"`, or "overhead" for spec.overhead.
std::string ListOwner(const std::string* container) {
  return container == nullptr ? "overhead" : "container \"" + *container + "\"";
}

// One pass over a resource list of `container` (nullptr: spec.overhead): the managed resources
// into `out` (unreadable ones reported in `warnings`), cpu and memory into `compute` and `has`
// (cpu first).
void ReadList(JsonView list, const std::string* container, ResourceList& out,
              ComputeRequest& compute, std::array<bool, 2>& has,
              std::vector<std::string>& warnings) {
  for (const auto& [resource, quantity] : list.Members()) {
    if (resource == "cpu" || resource == "memory") {
      if (auto v = ComputeQuantity(resource, quantity)) {
        bool cpu = resource[0] == 'c';
        (cpu ? compute.cpu_milli : compute.memory_bytes) = *v;
        has[cpu ? 0 : 1] = true;
      }
      continue;
    }
    if (!IsManagedResource(resource)) continue;
    if (!quantity.is_string() && !quantity.is_number_integer()) {
      warnings.push_back(ListOwner(container) + " " + std::string(resource) + " is not a quantity");
      continue;
    }
    auto n = quantity.is_string() ? ParseWholeQuantity(quantity.string())
                                  : ParseWholeQuantity(std::to_string(quantity.integer()));
    if (!n.ok()) {
      warnings.push_back(ListOwner(container) + " " + std::string(resource) + ": " +
                         n.error().message);
      continue;
    }
    out[resource] = n.value();
  }
}

void ReadContainer(JsonView c, std::string_view field, size_t index, ContainerRole role,
                   PodRequirements& out) {
  ContainerNeeds& needs = out.containers.emplace_back();  // filled in place
  needs.field.assign(field);
  needs.index = index;
  needs.role = role;
  auto [name, res] = c.Fields({"name", "resources"});
  needs.name.assign(name.string());
  if (res.is_object()) {
    auto [limit_list, request_list] = res.Fields({"limits", "requests"});
    ComputeRequest limits, requests;
    std::array<bool, 2> has_limit{}, has_request{};
    ReadList(limit_list, &needs.name, needs.limits, limits, has_limit, out.warnings);
    ReadList(request_list, &needs.name, needs.requests, requests, has_request, out.warnings);
    // A request defaults to its limit, resource by resource.
    needs.compute = {has_request[0] ? requests.cpu_milli : limits.cpu_milli,
                     has_request[1] ? requests.memory_bytes : limits.memory_bytes};
  }
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

void AddInto(ResourceList& sum, const ResourceList& add) {
  for (const auto& [r, n] : add) sum[r] += n;
}

void MaxInto(ResourceList& max, const ResourceList& other) {
  for (const auto& [r, n] : other) max[r] = std::max(Get(max, r), n);
}

void AddInto(ComputeRequest& sum, const ComputeRequest& add) {
  sum.cpu_milli += add.cpu_milli;
  sum.memory_bytes += add.memory_bytes;
}

void MaxInto(ComputeRequest& max, const ComputeRequest& other) {
  max.cpu_milli = std::max(max.cpu_milli, other.cpu_milli);
  max.memory_bytes = std::max(max.memory_bytes, other.memory_bytes);
}

// Adds container c's own request to `sum`: its requests, each defaulting to its limit, or its
// cpu and memory.
void AddNeedInto(ResourceList& sum, const ContainerNeeds& c) {
  for (const auto& [r, n] : c.requests) sum[r] += n;
  for (const auto& [r, n] : c.limits) {
    if (!c.requests.contains(r)) sum[r] += n;
  }
}

void AddNeedInto(ComputeRequest& sum, const ContainerNeeds& c) { AddInto(sum, c.compute); }

// The scheduler's rule for a pod's effective request (see EffectiveRequest), over either kind
// of list.
template <typename List>
List Effective(const std::vector<ContainerNeeds>& containers, const List& overhead) {
  List init_max{};
  List sidecars{};
  List apps{};
  for (const ContainerNeeds& c : containers) {
    switch (c.role) {
      case ContainerRole::kInit: {
        // A plain init container runs alongside the sidecars started before it.
        List with_sidecars = sidecars;
        AddNeedInto(with_sidecars, c);
        MaxInto(init_max, with_sidecars);
        break;
      }
      case ContainerRole::kSidecar:
        AddNeedInto(sidecars, c);
        MaxInto(init_max, sidecars);
        break;
      case ContainerRole::kApp:
        AddNeedInto(apps, c);
        break;
    }
  }
  AddInto(apps, sidecars);
  MaxInto(apps, init_max);
  AddInto(apps, overhead);
  return apps;
}

}  // namespace

JsonView ContainerObject(JsonView pod_spec, const ContainerNeeds& c) {
  JsonView field = pod_spec[c.field];
  if (field.is_object()) return field;  // a custom workload's single container (OME's runner)
  return field[c.index];
}

bool IsManagedResource(std::string_view resource) { return resource.starts_with("nvidia.com/"); }

bool HasManagedResource(const ResourceList& list) {
  return std::any_of(list.begin(), list.end(), [](const auto& entry) {
    return entry.second > 0 && IsManagedResource(entry.first);
  });
}

bool FitsIn(const ComputeRequest& ask, const ComputeRequest& left, const ComputeRequest& stated) {
  return (stated.cpu_milli == 0 || ask.cpu_milli <= left.cpu_milli) &&
         (stated.memory_bytes == 0 || ask.memory_bytes <= left.memory_bytes);
}

PodRequirements ReadPodRequirements(JsonView pod_spec, std::string_view gpu_container) {
  PodRequirements out;
  if (!pod_spec.is_object()) return out;
  ReadContainers(pod_spec, "initContainers", true, out);
  ReadContainers(pod_spec, "containers", false, out);
  if (!gpu_container.empty()) ReadNamedContainer(pod_spec, gpu_container, out);
  ComputeRequest overhead;
  std::array<bool, 2> has_overhead{};
  ReadList(pod_spec["overhead"], nullptr, out.overhead, overhead, has_overhead, out.warnings);
  out.effective = EffectiveRequest(out.containers, out.overhead);
  out.compute = Effective(out.containers, overhead);
  return out;
}

ResourceList EffectiveRequest(const std::vector<ContainerNeeds>& containers,
                              const ResourceList& overhead) {
  ResourceList apps = Effective(containers, overhead);
  erase_if(apps, [](const auto& entry) { return entry.second == 0; });
  return apps;
}

}  // namespace gpuadmit
