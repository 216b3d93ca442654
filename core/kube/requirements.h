// What a pod spec asks of the devices gpuadmit manages: per container, the whole-device
// extended resources (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*) in limits and
// requests, and the pod's effective request as the scheduler computes it.
//
//   PodRequirements needs = ReadPodRequirements(pod_spec);
//   int64_t n = Get(needs.effective, "nvidia.com/mig-2g.20gb");
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"
#include "core/kube/resource_list.h"

namespace gpuadmit {

// True for the extended resources gpuadmit counts and rewrites: the `nvidia.com/` ones.
bool IsManagedResource(std::string_view resource);

// True when `list` holds some managed resource with a positive count.
bool HasManagedResource(const ResourceList& list);

enum class ContainerRole { kInit, kSidecar, kApp };

// cpu and memory: what the scheduler's NodeResourcesFit checks besides extended resources, and
// what a node must still have for a GPU placement to be one the scheduler can follow.
struct ComputeRequest {
  int64_t cpu_milli = 0;  // thousandths of a CPU
  int64_t memory_bytes = 0;
  bool operator==(const ComputeRequest&) const = default;
};

// Whether `ask` fits in `left`, as NodeResourcesFit checks it: cpu or memory a node states none
// of (`stated` 0) is not checked.
bool FitsIn(const ComputeRequest& ask, const ComputeRequest& left, const ComputeRequest& stated);

struct ContainerNeeds {
  std::string name;
  ContainerRole role = ContainerRole::kApp;
  // Where the container is in the pod spec: "containers" or "initContainers" at `index`, or
  // the name of a field holding one container object (a custom workload's, e.g. "runner").
  std::string field = "containers";
  size_t index = 0;
  ResourceList limits;
  ResourceList requests;   // as written; a resource absent here counts at its limit
  ComputeRequest compute;  // its cpu and memory request, each defaulting to its limit
};

struct PodRequirements {
  ComputeRequest compute;                  // effective cpu and memory, by the same rule
  std::vector<ContainerNeeds> containers;  // init containers first, in order, then app containers
  ResourceList overhead;                   // spec.overhead
  ResourceList effective;                  // what the scheduler reserves for the whole pod
  std::vector<std::string> warnings;       // unreadable quantities, one line each
};

// Reads the managed resources of every container of `pod_spec`. A quantity that is not a whole
// number, a container list that is not a list, a container that is not an object: each is left
// out and reported in `warnings`; the apiserver will reject such a pod anyway.
// `gpu_container` names one more field of the spec holding a single (app) container, as custom
// workloads declare it (OME's `runner`); "" for none.
PodRequirements ReadPodRequirements(JsonView pod_spec, std::string_view gpu_container = {});

// The container object `c` was read from in `pod_spec` (an element of its field's list, or the
// custom workload's single container object); absent when there is none.
JsonView ContainerObject(JsonView pod_spec, const ContainerNeeds& c);

// The pod's effective request, as the scheduler computes it: the larger of the largest init
// container (plus the sidecars started before it) and the sum of app containers and sidecars,
// plus spec.overhead.
ResourceList EffectiveRequest(const std::vector<ContainerNeeds>& containers,
                              const ResourceList& overhead);

}  // namespace gpuadmit
