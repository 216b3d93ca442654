#include "core/report/report_pod.h"

#include <map>

#include "core/json/json_fields.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

bool OwnedByDaemonSet(const json& pod) {
  const json& owners = At(pod, {"metadata", "ownerReferences"});
  if (!owners.is_array()) return false;
  for (const json& owner : owners) {
    if (StringAt(owner, {"kind"}) == "DaemonSet") return true;
  }
  return false;
}

}  // namespace

ReportPod ReadReportPod(const json& pod) {
  // The reservation annotation plays no part in a report: any key will do.
  PodRecord record = ReadPod(pod, "gpuadmit.io/reservation");
  ReportPod p = ReportPodFromRecord(record);
  p.daemon_set = OwnedByDaemonSet(pod);
  p.constraints = ReadSchedulingConstraints(At(pod, {"spec"}));
  return p;
}

ReportPod ReportPodFromRecord(const PodRecord& record) {
  ReportPod p;
  p.key = record.key;
  p.node = record.node;
  p.terminal = record.terminal;
  p.need = record.need;
  p.compute = record.compute;
  if (record.queued) p.constraints = record.queued->constraints;
  return p;
}

Result<ReportCluster> ReportClusterFromList(const json& list) {
  auto items = list.is_object() ? list.find("items") : list.end();
  if (!list.is_object() || items == list.end() || !items->is_array()) {
    return Error{"the cluster list has no \"items\" array"};
  }
  ReportCluster cluster;
  DraDevices dra;
  for (const json& item : *items) {
    std::string kind = StringAt(item, {"kind"});
    if (kind == "Node") cluster.nodes.push_back(ReadNode(item));
    if (kind == "Pod") cluster.pods.push_back(ReadReportPod(item));
    if (kind == "ResourceSlice") dra.UpsertSlice(ReadResourceSlice(item));
    if (kind == "ResourceClaim") dra.UpsertClaim(ReadResourceClaim(item));
    if (kind == "DeviceClass") dra.UpsertClass(ReadDeviceClass(item));
  }
  AddDraDevices(cluster, dra);
  return cluster;
}

void AddDraDevices(ReportCluster& cluster, const DraDevices& dra) {
  if (dra.empty()) return;
  std::map<std::string, DraNodeCounts, std::less<>> counts = dra.CountByNode();
  for (NodeFacts& node : cluster.nodes) {
    if (auto c = counts.find(node.name); c != counts.end()) AddDraCounts(c->second, node);
  }
  std::map<std::string, size_t, std::less<>> index;  // pod key -> position in cluster.pods
  for (size_t i = 0; i < cluster.pods.size(); ++i) index.emplace(cluster.pods[i].key, i);
  for (const ClaimedDevice& d : dra.UsedByClaims()) {
    const std::string key = d.owner_pod.empty() ? "claim " + d.claim : d.owner_pod;
    auto [at, added] = index.emplace(key, cluster.pods.size());
    if (added) cluster.pods.push_back(ReportPod{.key = key, .node = d.node});
    ++cluster.pods[at->second].need[d.resource];
  }
}

}  // namespace gpuadmit
