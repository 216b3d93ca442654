// The JSON merge patch (RFC 7386) with which the leader lifts the capacity gate from a pod it
// has just read: Kubernetes lets a gated pod's scheduling gates be removed and, while it is
// still gated, its required node affinity narrowed (Kubernetes 1.27+, KEP-3838), both in one
// update. The patch carries the resourceVersion it was computed from, so the apiserver refuses
// it (409 Conflict) when anything changed the pod since: the lifter reads it again next pass.
//
//   nlohmann::json patch = LiftPatch(pod, "gpuadmit.io/capacity",
//                                    {"gpuadmit.io/queue", "lifted: capacity on gpu-a after 42s"},
//                                    "gpu-a");
//   client.Send("PATCH", PodPath(ns, name), patch.dump(), "application/merge-patch+json");
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace gpuadmit {

// Whether `pod` lists `gate` among its spec.schedulingGates.
bool HasGate(const nlohmann::json& pod, std::string_view gate);

// The patch that removes `gate` from `pod`'s spec.schedulingGates (the others stay; none left:
// the field is removed), sets the annotation `note` (key, value), and, with a `node`, pins the
// pod there: a required node affinity field requirement metadata.name In [node] (the node's
// name, as the DaemonSet controller pins its pods; the hostname label need not equal it), ANDed
// into each of the pod's required terms, or the only term when it has none (the only change
// the apiserver allows to existing terms is adding requirements to them).
// metadata.resourceVersion is `pod`'s.
nlohmann::json LiftPatch(const nlohmann::json& pod, std::string_view gate,
                         const std::pair<std::string, std::string>& note, std::string_view node);

// "/api/v1/namespaces/NS/pods/NAME".
std::string PodPath(std::string_view ns, std::string_view name);

}  // namespace gpuadmit
