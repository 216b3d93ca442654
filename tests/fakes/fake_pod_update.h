// MergePatchPod: a JSON merge patch (RFC 7386, Content-Type application/merge-patch+json)
// applied to a stored Pod as the kube-apiserver applies a PATCH to pods/NAME, with no HTTP or
// storage in it; FakeKubeApiServer's pod route is a thin adapter over it. What it copies from
// the apiserver (the patch handler, the generic store, the pod strategy and ValidatePodUpdate):
//   - A body that is not a JSON object is 400 BadRequest; a patch that renames the pod or moves
//     it to another namespace is 400 too.
//   - metadata.resourceVersion in the patch is a precondition: not the stored one, 409 Conflict.
//     Without one the patch is unconditional.
//   - status is not updated through the pod itself: the stored status is kept.
//   - spec.schedulingGates may only lose entries (KEP-3521): a new gate is 422 Invalid.
//   - While the stored pod has a scheduling gate (KEP-3838), spec.nodeSelector may gain entries
//     (not lose or change them) and spec.affinity.nodeAffinity may change, except that non-empty
//     required nodeSelectorTerms keep their number and each term its matchExpressions and
//     matchFields as a prefix (additions only); else 422 Invalid.
//   - Any other spec change is 422 Invalid ("pod updates may not change fields other than..."),
//     but for those the apiserver allows: containers' and initContainers' images,
//     activeDeadlineSeconds and tolerations (existing ones kept, tolerationSeconds aside), whose
//     own rules are not checked here. As the apiserver's semantic equality, an absent field, null,
//     [] and {} are alike.
// 422s carry the apiserver's Status: message `Pod "NAME" is invalid: <field errors>` and one
// cause per field error. The resourceVersion of a success is the stored one: a new one is the
// caller's to give (from its server-wide counter), and only when `changed`.
//
//   PodUpdate update = MergePatchPod(stored, R"({"spec":{"schedulingGates":null}})");
//   // update.status == 200, update.changed, update.body: the pod without its gates
//
// Thread safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gpuadmit::testing {

struct PodUpdate {
  int status = 0;        // 200, or the error's code: 400, 409 or 422
  nlohmann::json body;   // the updated Pod, or a Status
  bool changed = false;  // on 200: whether the Pod differs from the stored one (else no write)
};

// Applies `patch_body` (the request's body) to `stored` (a Pod with metadata.name, namespace and
// resourceVersion), validating the result as a pod update.
PodUpdate MergePatchPod(const nlohmann::json& stored, const std::string& patch_body);

}  // namespace gpuadmit::testing
