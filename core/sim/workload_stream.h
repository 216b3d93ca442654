// Workload stream: the input of `gpuadmit simulate --workload FILE`, JSON lines of
// `{"at": seconds, "duration": seconds, "object": {...}}` read into the Arrivals Replay plays.
// "at" (a number >= 0) is required; "duration" absent or null means the pod stays; "interval"
// (seconds, default 0) spaces the pods a controller creates, the k-th at at + k x interval (a
// ReplicaSet controller creating 20 pods within 100 ms: 0.005). Blank lines and lines starting
// with `#` are skipped. The object is a v1 Pod, or a controller (apps/v1
// Deployment, ReplicaSet or StatefulSet, batch/v1 Job) expanded into the Pods it would create,
// each then reviewed as a Pod.
//
//   {"at": 0, "duration": 600, "object": {"apiVersion": "apps/v1", "kind": "Deployment", ...}}
//
//   Result<std::vector<Arrival>> arrivals = ParseWorkloadStream(text);
//   if (!arrivals.ok()) return Error{arrivals.error().message};  // "line 3: ..."
//
// Expansion, as the controllers do it (names are deterministic where Kubernetes draws random
// suffixes, so a replay is repeatable):
// - Pod: as is; metadata.namespace defaults to "default". A Pod with only metadata.generateName
//   is named generateName + a 5-character suffix derived from its line number (0 through
//   ExpandToPods). Neither name: an error.
// - Deployment: spec.replicas (default 1) pods named `<name>-<hash>-<suffix>`, where <hash> is
//   the pod-template-hash (10 characters, from the template, see ComputeHash in the .cc) and
//   <suffix> 5 characters from the ordinal; label `pod-template-hash: <hash>`; owned by the
//   ReplicaSet `<name>-<hash>`.
// - ReplicaSet: spec.replicas (default 1) pods `<name>-<suffix>`, owned by the ReplicaSet.
// - StatefulSet: spec.replicas (default 1) pods `<name>-<ordinal>`; labels
//   `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`; spec.hostname is
//   the pod's name, spec.subdomain spec.serviceName when set.
// - Job: min(spec.parallelism (default 1), spec.completions (default parallelism)) pods, none
//   when spec.suspend; named `<name>-<suffix>`; labels `batch.kubernetes.io/job-name` and
//   `job-name`; restartPolicy Never or OnFailure from the template (Never when unset).
// Every controller's pod: apiVersion v1, kind Pod, metadata {name, namespace (the controller's,
// else "default"), labels (the template's plus those above), annotations (the template's),
// ownerReferences (the controller, controller: true)}, spec a copy of spec.template.spec. The
// controller's own labels are not copied: Kubernetes copies only the template's.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/sim/replay.h"

namespace gpuadmit {

// Every pod the stream's objects create, in line order, a controller's pods in ordinal order;
// the pods of one line carry that line's "duration", and "at" plus their ordinal times its
// "interval". Errors name the line: "line 3: ..." (not JSON, no "at", negative "at", "duration" not
// a number or negative, an object of an unsupported kind, a controller without spec.template,
// replicas negative), and stop the parse.
Result<std::vector<Arrival>> ParseWorkloadStream(std::string_view text);

// The Pods `object` (a Pod or a controller) creates, in ordinal order, by the rules above.
// Errors as ParseWorkloadStream's, without the line.
Result<std::vector<nlohmann::json>> ExpandToPods(const nlohmann::json& object);

}  // namespace gpuadmit
