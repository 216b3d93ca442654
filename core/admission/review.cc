#include "core/admission/review.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <tuple>

#include "core/admission/claim_review.h"
#include "core/admission/claim_steering.h"
#include "core/admission/job_defaults.h"
#include "core/admission/mutations.h"
#include "core/dra/dra_objects.h"
#include "core/kube/workload.h"
#include "core/plan/planner.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// Adds a pod spec's managed resources ("nvidia.com/gpu=1, nvidia.com/mig-1g.10gb=2") to
// `asked`, "; " after the previous pod spec's.
void AppendAsked(const ResourceList& effective, std::string& asked) {
  std::string_view separator = asked.empty() ? "" : "; ";
  for (const auto& [resource, count] : effective) {
    if (!IsManagedResource(resource)) continue;
    AppendAll(asked, {separator, resource, "=", Digits(count)});
    separator = ", ";
  }
}

// The object's name: the request's, else metadata.name, else metadata.generateName (a Pod
// created through generateName is admitted before it has a name).
std::string Name(const AdmissionRequest& r) {
  if (!r.name.empty()) return r.name;
  JsonView metadata = r.object["metadata"];
  std::string_view name = metadata["name"].string();
  return std::string(name.empty() ? metadata["generateName"].string() : name);
}

// "Kind namespace/name", for messages and logs.
std::string ObjectName(const AdmissionRequest& r) {
  const std::string name = Name(r);
  return Joined({r.kind.kind, " ", r.ns, r.ns.empty() ? "" : "/",
                 name.empty() ? std::string_view("(unnamed)") : std::string_view(name)});
}

// What a template asks of GPUs, container by container: UPDATEs that leave this alone pass.
auto GpuAsk(JsonView object, const PodSpecLocation& at) {
  std::vector<std::tuple<int, std::string, ResourceList, ResourceList>> ask;
  JsonView spec = object.AtPointer(at.spec);
  if (!spec.present()) return ask;
  const auto containers = ReadPodRequirements(spec, at.gpu_container).containers;
  std::transform(containers.begin(), containers.end(), std::back_inserter(ask),
                 [](const ContainerNeeds& c) {
                   return std::make_tuple(static_cast<int>(c.role), c.name, c.limits, c.requests);
                 });
  return ask;
}

// "nvidia.com/mig-2g.20gb x1, ..." for the trail.
std::string Describe(const ResourceList& list) {
  std::string out;
  for (const auto& [resource, count] : list) {
    AppendAll(out, {out.empty() ? "" : ", ", resource, " x", Digits(count)});
  }
  return out;
}

// Moves `from`'s lines to the end of `to`: the vector itself when `to` is empty, as it is for
// the first pod spec, the lines one by one after that.
void MoveAppend(std::vector<std::string>& from, std::vector<std::string>& to) {
  if (to.empty()) {
    to = std::move(from);
    return;
  }
  for (std::string& line : from) to.push_back(std::move(line));
}

// Whose reservation a key is: "namespace/name".
std::string Owner(const AdmissionRequest& r) { return Joined({r.ns, "/", Name(r)}); }

std::string ExistingAnnotation(JsonView object, const PodSpecLocation& at, const std::string& key) {
  return std::string(object.AtPointer(at.metadata)["annotations"][key].string());
}

// Plans one Pod and reserves what the plan counted on, planning again if a concurrent decision
// took it first. The key is the pod's own earlier one (a reinvocation), else the request uid.
Decision PlanAndReserve(const AdmissionRequest& r, const PodSpecLocation& at, const PodRequest& pod,
                        const ReviewContext& context, Reservations& reservations) {
  std::string annotation = context.policy.Annotation("reservation");
  std::string owner = Owner(r);
  std::string key = ExistingAnnotation(r.object, at, annotation);
  if (key.empty() || !reservations.Holds(key, owner)) key = r.uid;
  PlanContext plan{context.snapshot, context.policy, context.metrics, &reservations, key};
  plan.explain = context.explain;
  // Every path returns `d`, so it is made where the caller keeps it: a decision is not moved.
  Decision d = Plan(pod, plan);
  for (int attempt = 1;; ++attempt) {
    if (d.claims.empty() || d.deny) return d;
    if (reservations.Commit(key, owner, d.claims)) {
      d.annotations.emplace_back(annotation, key);
      d.trail.push_back(Joined({"reserved under ", key}));
      return d;
    }
    if (attempt == kMaxPlanAttempts) break;
    d = Plan(pod, plan);
  }
  d = Decision{};
  d.warnings.push_back("gpuadmit: " + pod.name +
                       " left unchanged: devices taken by concurrent admissions");
  return d;
}

// Whether claims are steered to a GPU (claim_steering.h): steering, placement and firstAvailable
// on, and no <prefix>/optimize: "false" on the claim.
bool Steers(const Policy& policy, JsonView claim) {
  const DraPolicy& dra = policy.dra;
  if (!dra.steer_claims || !policy.placement.enabled || !dra.first_available) return false;
  for (const std::string& key : policy.InputKeys("optimize")) {
    if (claim["metadata"]["annotations"][key].string() == "false") return false;
  }
  return true;
}

// A ResourceClaim or ResourceClaimTemplate (claim_review.h), planned at CREATE. Its spec is
// immutable: an UPDATE whose spec is what gpuadmit's CREATE made of it (`kubectl apply` of the
// same manifest again) gets that patch once more, so the spec is unchanged and the update passes;
// any other UPDATE is left to the apiserver.
AdmissionOutcome DecideClaim(const AdmissionRequest& r, const ReviewContext& context,
                             ReviewAnswer& answer) {
  const bool update = r.operation == Operation::kUpdate;
  const std::string spec_at = r.kind.kind == "ResourceClaimTemplate" ? "/spec/spec" : "/spec";
  if (update && r.object.AtPointer(spec_at).Dump() == r.old_object.AtPointer(spec_at).Dump()) {
    answer.trail.push_back("UPDATE of a " + r.kind.kind + " that leaves its spec: not planned");
    return AdmissionOutcome::Allow();
  }
  if (r.object["metadata"]["annotations"][kExtendedResourceClaimAnnotation].string() == "true") {
    // kube-scheduler chose its devices before it made it, from the pod's extended-resource
    // request, which the pod's own review decided: a rewrite would only part spec from status.
    answer.trail.push_back(
        "made by kube-scheduler for a pod's extended resources: left as written");
    return AdmissionOutcome::Allow();
  }
  if (context.inventory_stale && !context.policy.dra.first_available) {
    answer.skipped_stale = true;
    answer.decisions.Mark(DecisionPoint::kReviewSkippedStale);
    answer.trail.push_back("inventory stale: claim decision skipped");
    return AdmissionOutcome::Allow(
        {"gpuadmit: the GPU inventory is stale (watch down); the claim passes unchanged"});
  }
  ClaimDecision d = PlanClaim(r.kind, r.object, context.snapshot, context.policy);
  std::string owner = r.kind.kind == "ResourceClaim" ? ClaimOwnerPod(r.object) : "";
  if (!owner.empty() && !update && Steers(context.policy, r.object)) {
    // Steered as the claim will be stored: after what PlanClaim wrote.
    nlohmann::json planned = r.object.ToJson().patch(d.patch.ToJson());
    // Where the owner's admission counted it: its reservation, found by the key the watch read
    // from the pod (a pod made from generateName was admitted before it had its name), or,
    // while the watch has not shown the pod (its claim is made milliseconds after it), by the
    // name it was admitted under.
    std::string_view key = context.snapshot.ReservationOfClaimPod(owner);
    std::vector<Claim> counted;
    if (context.reservations != nullptr) {
      counted =
          key.empty() ? context.reservations->HeldFor(owner) : context.reservations->HeldUnder(key);
    }
    ClaimDecision s = SteerClaim(planned, context.snapshot, context.policy, counted);
    d.trail.push_back("made for pod " + owner);
    MoveAppend(s.trail, d.trail);
    d.patch.Append(s.patch);
  }
  MoveAppend(d.trail, answer.trail);
  answer.asked = std::move(d.asked);
  if (update) {
    nlohmann::json made = r.object.ToJson().patch(d.patch.ToJson());
    if (made.at(nlohmann::json::json_pointer(spec_at)) != r.old_object.AtPointer(spec_at).ToJson()) {
      answer.trail.push_back("UPDATE of a " + r.kind.kind +
                             " changing its spec: left to the apiserver (the spec is immutable)");
      return AdmissionOutcome::Allow();
    }
    answer.trail.push_back("UPDATE with the spec as written before: written as gpuadmit made it");
  } else {
    answer.decisions.Add(std::move(d.tally));
  }
  if (d.patch.empty()) return AdmissionOutcome::Allow(std::move(d.warnings));
  return AdmissionOutcome::Patch(std::move(d.patch), update ? std::vector<std::string>{}
                                                            : std::move(d.warnings));
}

AdmissionOutcome Decide(const AdmissionRequest& r, const ReviewContext& context,
                        ReviewAnswer& answer) {
  const Policy& policy = context.policy;
  if (!r.sub_resource.empty()) {
    answer.trail.push_back("subresource " + r.sub_resource + ": not planned, only the object is");
    return AdmissionOutcome::Allow();
  }
  if (r.operation != Operation::kCreate && r.operation != Operation::kUpdate) {
    answer.trail.push_back("not a CREATE or UPDATE: not planned");
    return AdmissionOutcome::Allow();
  }
  if (policy.IsExempt(r.ns)) {
    answer.trail.push_back("namespace " + r.ns + " is exempt");
    return AdmissionOutcome::Allow();
  }
  if (IsClaimKind(r.kind)) return DecideClaim(r, context, answer);
  if (!IsKnownKind(r.kind, policy.workloads)) {
    answer.trail.push_back(
        "kind " + (r.kind.group.empty() ? "" : r.kind.group + "/") + r.kind.kind +
        ": not planned: not a Pod or a built-in workload, and no policy workloads entry names it");
    return AdmissionOutcome::Allow();
  }
  const JsonView object = r.object;
  auto locations = FindPodSpecs(r.kind, object, policy.workloads);
  if (!locations.ok()) return AdmissionOutcome::Fail(locations.error().message);

  JsonPatch patch;
  std::vector<std::string> warnings;
  bool asks_gpus = false;  // some pod spec planned asks for GPUs
  for (const PodSpecLocation& at : locations.value()) {
    if (r.operation == Operation::kUpdate) {
      // A Pod's resources are immutable; a template is replanned only when its GPU ask changed.
      if (at.is_pod) {
        answer.trail.push_back("UPDATE of a Pod: not planned, its resources are immutable");
        continue;
      }
      if (GpuAsk(object, at) == GpuAsk(r.old_object, at)) {
        answer.trail.push_back(at.spec + ": UPDATE with the same GPU ask: not planned again");
        continue;
      }
    }
    PodRequest pod = PodRequest::From(r.ns, answer.summary, object.AtPointer(at.spec),
                                      object.AtPointer(at.metadata), at.is_pod, at.gpu_container);
    pod.pin_node = at.pin_node;
    if (at.is_pod && AddClaimNeeds(pod, object.AtPointer(at.spec), context.snapshot)) {
      answer.trail.push_back("its DRA claims ask " + Describe(pod.needs.effective));
    }
    if (context.inventory_stale && !pod.needs.effective.empty()) {
      // Free counts from a watch that has been down for a minute may be far off: deciding on
      // them could send pods where nothing is free. Passing unchanged is what the pod asked for.
      answer.skipped_stale = true;
      answer.decisions.Mark(DecisionPoint::kReviewSkippedStale);
      answer.trail.push_back("inventory stale: GPU decision skipped");
      warnings.push_back("gpuadmit: the GPU inventory is stale (watch down); " + pod.name +
                         " passes unchanged");
      continue;
    }
    AppendAsked(pod.needs.effective, answer.asked);
    if (!pod.needs.effective.empty()) asks_gpus = true;
    bool reserve = context.reservations != nullptr && at.is_pod && !r.dry_run;
    PlanContext plan{context.snapshot, policy, context.metrics, context.reservations};
    plan.explain = context.explain;
    Decision d =
        reserve ? PlanAndReserve(r, at, pod, context, *context.reservations) : Plan(pod, plan);
    if (pod.claims_devices) KeepPodLevelChanges(d);
    // Moved: the patch below reads neither.
    MoveAppend(d.trail, answer.trail);
    MoveAppend(d.warnings, warnings);
    answer.decisions.Add(std::move(d.tally));
    if (!d.node.empty()) AppendAll(answer.node, {answer.node.empty() ? "" : "; ", d.node});
    if (d.deny) {
      answer.decisions.Mark(DecisionPoint::kReviewDenied);
      return AdmissionOutcome::Deny(403, "gpuadmit: " + *d.deny, std::move(warnings));
    }
    AppendPatch(object, at, d, patch);
  }
  if (asks_gpus && r.operation == Operation::kCreate) {
    AppendJobDefaults(r.kind, object, policy.job_defaults, patch, answer.trail);
  }
  if (patch.empty()) return AdmissionOutcome::Allow(std::move(warnings));
  return AdmissionOutcome::Patch(std::move(patch), std::move(warnings));
}

// Decide, and what a decision that throws is answered with: a bug, not bad input, so the
// policy's failure mode answers it, and nothing planned before it took effect.
AdmissionOutcome DecideOrFail(const AdmissionRequest& r, const ReviewContext& context,
                              ReviewAnswer& answer) {
  try {
    return Decide(r, context, answer);
  } catch (const std::exception& e) {
    answer.decisions = DecisionCounts{};
    return AdmissionOutcome::Fail(std::string("internal error: ") + e.what());
  }
}

}  // namespace

Result<ReviewAnswer> Review(std::string_view body, const InventorySnapshot& snapshot,
                            const Policy& policy, Reservations* reservations,
                            bool inventory_stale) {
  return Review(body, ReviewContext{snapshot, policy, nullptr, reservations, inventory_stale});
}

Result<ReviewAnswer> Review(std::string_view body, const ReviewContext& context) {
  auto request = DecodeAdmissionReview(body);
  if (!request.ok()) return request.error();
  return ReviewRequest(request.value(), context);
}

ReviewAnswer ReviewRequest(const AdmissionRequest& r, const ReviewContext& context) {
  ReviewAnswer answer;
  answer.uid = r.uid;
  answer.summary = ObjectName(r);
  AdmissionOutcome outcome = DecideOrFail(r, context, answer);
  answer.kind = outcome.kind;
  answer.body = EncodeAdmissionResponse(r, outcome, context.policy.failure_mode);
  answer.warnings = std::move(outcome.warnings);  // the answer's body has them already
  return answer;
}

}  // namespace gpuadmit
