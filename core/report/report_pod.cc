#include "core/report/report_pod.h"

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
  for (const json& item : *items) {
    std::string kind = StringAt(item, {"kind"});
    if (kind == "Node") cluster.nodes.push_back(ReadNode(item));
    if (kind == "Pod") cluster.pods.push_back(ReadReportPod(item));
  }
  return cluster;
}

}  // namespace gpuadmit
