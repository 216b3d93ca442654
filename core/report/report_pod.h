// ReportPod: a pod as `gpuadmit report` reads it, what the inventory's PodRecord keeps plus what
// consolidation needs to know before moving it: the scheduling constraints of a bound pod (the
// inventory keeps them for queued pods only) and whether a DaemonSet owns it (such a pod runs
// on every node it may and is never moved). ReportInputFromList reads both nodes and pods out of
// what `kubectl get nodes,pods -A -o json` prints (or the items of two List calls), with the
// GPUs DRA hands out counted as the inventory counts them (AddDraDevices).
//
//   Result<ReportCluster> c = ReportClusterFromList(list);  // {"items": [Node..., Pod...]}
//   ReportPod p = ReportPodFromRecord(record);  // from a ClusterState: constraints unknown
//
// Thread safety: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/dra/dra_devices.h"
#include "core/kube/kube_objects.h"
#include "core/kube/requirements.h"
#include "core/kube/scheduling.h"
#include "core/result.h"

namespace gpuadmit {

struct ReportPod {
  std::string key;          // namespace/name
  std::string node;         // spec.nodeName; "" while unbound
  bool terminal = false;    // Succeeded or Failed: holds nothing
  bool daemon_set = false;  // an ownerReference of kind DaemonSet: stays where it is
  ResourceList need;        // effective managed requests (nvidia.com/...)
  ComputeRequest compute;   // effective cpu and memory requests
  // nodeSelector, required node affinity and tolerations. nullopt when not known (a pod built
  // from a PodRecord): consolidation then moves it only to nodes like its own (same GPU product,
  // no taint its own node lacks).
  std::optional<SchedulingConstraints> constraints;
};

// Reads one Pod object (an item of a v1 List or PodList).
ReportPod ReadReportPod(const nlohmann::json& pod);

// A pod the inventory mirrors (ClusterState, a running server): constraints are those of a
// queued pod, unknown for a bound one; never a DaemonSet pod (the record does not say).
ReportPod ReportPodFromRecord(const PodRecord& record);

struct ReportCluster {
  std::vector<NodeFacts> nodes;  // in list order
  std::vector<ReportPod> pods;   // in list order
};

// The Nodes and Pods among `list`'s items, with its ResourceSlices, ResourceClaims and
// DeviceClasses made into AddDraDevices (other kinds are skipped). Errors when `list` has no
// `items` array, as InventorySnapshot::FromObjects.
Result<ReportCluster> ReportClusterFromList(const nlohmann::json& list);

// Counts what `dra` holds into `cluster`: each node gains what its DRA devices come to, as in
// the inventory (AddDraCounts), and each device an allocated claim holds is asked by the pod
// the claim was made for, or, for a claim made for no pod, by a pod of its own on the device's
// node ("claim <namespace/name>"), so consolidation sees it held.
void AddDraDevices(ReportCluster& cluster, const DraDevices& dra);

}  // namespace gpuadmit
