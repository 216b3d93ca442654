#include "core/plan/queue_gate.h"

#include <string>
#include <string_view>

#include "core/plan/node_ranking.h"

namespace gpuadmit {
namespace {

// Why the pod waits, as the <prefix>/queue annotation says it; "" when it need not.
std::string WhyItWaits(const PodRequest& pod, const PlanContext& context, const Decision& d,
                       const NodeAsk& primary, const std::string& gate) {
  // The nodes it may use once patched: the nodeSelector and required terms decided so far, and
  // the worker-default tolerations placement adds (a GPU node's taint would hide it otherwise).
  SchedulingConstraints patched = AsPatched(pod.constraints, d);
  const std::vector<Toleration>& defaults = context.policy.worker_defaults.tolerations;
  patched.tolerations.insert(patched.tolerations.end(), defaults.begin(), defaults.end());
  if (FindFreeNodeUnder(patched, pod, context, primary.resource, primary.count) == nullptr) {
    return "waiting: " + std::to_string(primary.count) + " " + primary.resource +
           " free on no node it may use";
  }
  if (size_t waiting = context.snapshot.GatedBy(gate); waiting > 0) {
    return "waiting: behind " + std::to_string(waiting) + (waiting == 1 ? " pod" : " pods") +
           " in the capacity queue";
  }
  return "";
}

}  // namespace

std::string CapacityGate(const Policy& policy) { return policy.Annotation("capacity"); }

void PlanQueueGate(const PodRequest& pod, const PlanContext& context, PlanState& state,
                   Decision& d) {
  const Policy& policy = context.policy;
  if (!policy.queue.Queues(pod.ns) || !pod.is_pod || state.opted_out) return;
  std::vector<NodeAsk> asks = AsksOf(state.effective());
  if (asks.empty()) return;
  if (!pod.spec["nodeName"].string().empty()) return;
  std::string gate = CapacityGate(policy);
  std::string reason = WhyItWaits(pod, context, d, asks.front(), gate);
  if (reason.empty()) return;
  state.gated = true;
  d.tally.Mark(DecisionPoint::kQueueGated);
  // What earlier stages counted on is not taken while the pod waits: no reservation for it.
  d.claims.clear();
  // An earlier stage's "left unchanged" is no longer so: the pod is held back instead.
  constexpr std::string_view kUnchanged = " left unchanged";
  for (std::string& warning : d.warnings) {
    if (warning.ends_with(kUnchanged)) {
      warning.replace(warning.size() - kUnchanged.size(), kUnchanged.size(),
                      " held back by the scheduling gate " + gate + " until it fits");
    }
  }
  d.trail.push_back("queue: gated " + gate + ": " + reason);
  d.annotations.emplace_back(policy.Annotation("queue"), std::move(reason));
  d.scheduling_gate = std::move(gate);
}

}  // namespace gpuadmit
