#include "core/plan/placement.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/plan/node_ranking.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

bool ContainsIgnoringCase(std::string_view text, std::string_view part) {
  return std::search(text.begin(), text.end(), part.begin(), part.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

// Whether a pod tolerating `have` already tolerates every taint `want` does.
bool Covers(const Toleration& have, const Toleration& want) {
  if (!have.effect.empty() && have.effect != want.effect) return false;
  if (have.op == "Exists") return have.key.empty() || have.key == want.key;
  return want.op != "Exists" && have.key == want.key && have.value == want.value;
}

std::string TolerationText(const Toleration& t) {
  std::string s = t.key.empty() ? "*" : t.key;
  if (t.op == "Exists") {
    s += " Exists";
  } else {
    s += "=" + t.value;
  }
  return s + ":" + (t.effect.empty() ? "*" : t.effect);
}

bool SomeGpuContainerLacksShm(const PodRequest& pod) {
  return std::any_of(pod.needs.containers.begin(), pod.needs.containers.end(),
                     [&](const ContainerNeeds& c) {
                       if (c.limits.empty() && c.requests.empty()) return false;
                       JsonView container = ContainerObject(pod.spec, c);
                       return container.present() && !MountsShm(container);
                     });
}

// The GPU type the pod asks for by its nodeSelector: the product label's value, else the
// accelerator label's; "" when it names none.
std::string_view SelectedGpuType(const PodRequest& pod) {
  for (std::string_view key : {kProductLabel, kAcceleratorLabel}) {
    auto it = pod.constraints.node_selector.find(std::string(key));
    if (it != pod.constraints.node_selector.end()) return it->second;
  }
  return {};
}

// The cpu and memory of the pod's GPU type, for the GPU containers that set none; the patch
// leaves out a request above the container's limit and a limit below its request.
void AddResourceDefaults(const PodRequest& pod, const WorkerDefaults& defaults, Decision& d) {
  std::string_view type = SelectedGpuType(pod);
  if (type.empty()) return;
  for (const GpuTypeResources& r : defaults.resources) {
    if (!ContainsIgnoringCase(type, r.gpu_type)) continue;
    d.resource_defaults = r.defaults;
    std::string listed;
    for (const ResourceDefault& q : r.defaults) {
      listed += (listed.empty() ? "" : ", ") + q.section + "." + q.resource + " " + q.quantity;
    }
    d.trail.push_back("worker default: GPU type " + r.gpu_type + " (" + std::string(type) +
                      "): " + listed + " where a GPU container sets none");
    return;
  }
}

// The pod's cpu and memory request once `defaults` are added to the GPU containers that set
// neither a request nor a limit of them (a limit alone becomes the request).
ComputeRequest WithResourceDefaults(const PodRequest& pod,
                                    const std::vector<ResourceDefault>& defaults) {
  ComputeRequest compute = pod.needs.compute;
  auto added = [&](std::string_view resource) -> int64_t {
    int64_t limit = 0;
    for (const ResourceDefault& q : defaults) {
      if (q.resource != resource) continue;
      if (q.section == "requests") return q.milli;
      limit = q.milli;
    }
    return limit;
  };
  const int64_t cpu_milli = added("cpu");
  const int64_t memory_bytes = added("memory") / 1000;
  for (const ContainerNeeds& c : pod.needs.containers) {
    if (c.limits.empty() && c.requests.empty()) continue;
    if (c.compute.cpu_milli == 0) compute.cpu_milli += cpu_milli;
    if (c.compute.memory_bytes == 0) compute.memory_bytes += memory_bytes;
  }
  return compute;
}

// The worker defaults: the configured tolerations the pod lacks (they also widen the
// nodes it may run on), an in-memory /dev/shm, and the cpu and memory of its GPU type.
void AddWorkerDefaults(const PodRequest& pod, const WorkerDefaults& defaults, Decision& d) {
  for (const Toleration& want : defaults.tolerations) {
    auto covers = [&](const Toleration& have) { return Covers(have, want); };
    if (std::any_of(pod.constraints.tolerations.begin(), pod.constraints.tolerations.end(),
                    covers) ||
        std::any_of(d.tolerations.begin(), d.tolerations.end(), covers)) {
      continue;
    }
    d.tolerations.push_back(want);
    d.trail.push_back("worker default: toleration " + TolerationText(want) + " added");
  }
  if (!defaults.shm_size.empty() && SomeGpuContainerLacksShm(pod)) {
    d.shm_size = defaults.shm_size;
    d.trail.push_back("worker default: " + std::string(kShmPath) + " in memory, " +
                      defaults.shm_size);
  }
  AddResourceDefaults(pod, defaults, d);
}

// The values of `labelled` that contain `product`, ignoring case.
std::vector<std::string> Matching(std::span<const std::string_view> labelled,
                                  const std::string& product) {
  std::vector<std::string> values;
  for (std::string_view v : labelled) {
    if (!v.empty() && ContainsIgnoringCase(v, product)) values.emplace_back(v);
  }
  return values;
}

// Preferred terms per configured GPU type that some node offering the resource has; affinity
// matches exact label values, so a term lists the values the type matches. Nodes with GPU Feature
// Discovery's product label get a term on it; nodes labelled only `accelerator` get a term on
// that, which also asks for no product label, so no node matches both and counts twice.
void AddGpuTypePreferences(const std::string& resource, const PlanContext& context, Decision& d) {
  auto products = context.snapshot.ProductsOffering(resource);
  auto accelerators = context.snapshot.AcceleratorsOffering(resource);
  for (const GpuTypePreference& type : context.policy.placement.gpu_types) {
    std::vector<std::string> by_product = Matching(products, type.product);
    std::vector<std::string> by_accelerator = Matching(accelerators, type.product);
    if (by_product.empty() && by_accelerator.empty()) {
      d.trail.push_back("GPU type " + type.product + ": no node offering " + resource + " has it");
      continue;
    }
    auto prefer = [&](std::string_view key, std::vector<std::string> values,
                      std::vector<NodeSelectorRequirement> also) {
      std::string listed;
      for (const std::string& v : values) listed += (listed.empty() ? "" : ", ") + v;
      d.trail.push_back("GPU type " + type.product + ": prefer " + std::string(key) + " In [" +
                        listed + "], weight " + std::to_string(type.weight));
      also.insert(also.begin(), NodeSelectorRequirement{std::string(key), "In", std::move(values)});
      d.preferred.push_back({type.weight, std::move(also)});
    };
    if (!by_product.empty()) prefer(kProductLabel, std::move(by_product), {});
    if (!by_accelerator.empty()) {
      prefer(kAcceleratorLabel, std::move(by_accelerator),
             {{std::string(kProductLabel), "DoesNotExist", {}}});
    }
  }
}

std::string Percent(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", *v);
  return buf;
}

// "8/8 free, idle 8, avg util 0.0%, avg mem 0.0%"; with pods
// queued for the scheduler counted on it, "2/8 free (used 2, queued 4), idle 2, ...".
std::string Describe(const RankedNode& r, const std::string& resource, PlacementStrategy strategy) {
  if (!r.fits) return "cannot take it: " + r.why_not;
  std::string s = std::to_string(r.free) + "/" + std::to_string(r.allocatable) + " free";
  if (int64_t queued = Get(r.node->queued, resource); queued > 0) {
    s += " (used " + std::to_string(Get(r.node->used, resource)) + ", queued " +
         std::to_string(queued) + ")";
  }
  s += ", idle " + std::to_string(r.idle);
  if (r.utilization_percent || r.memory_used_percent) {
    s += ", avg util " + Percent(r.utilization_percent) + ", avg mem " +
         Percent(r.memory_used_percent);
  } else {
    s += ", no metrics";
  }
  if (strategy == PlacementStrategy::kScore) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ", score %.3f", r.score);
    s += buf;
  }
  return s;
}

void Explain(const NodeRanking& ranking, const NodeAsk& primary, const PlacementPolicy& placement,
             Decision& d) {
  bool required = placement.affinity == AffinityMode::kRequired;
  d.trail.push_back("=== GPU Node Selection ===");
  std::string looking = placement.strategy == PlacementStrategy::kMostIdle ? " idle " : " free ";
  d.trail.push_back("Looking for a node with " + std::to_string(primary.count) + looking +
                    primary.resource + " (" + std::string(StrategyName(placement.strategy)) + ", " +
                    (required ? "required" : "preferred") + " affinity)...");
  if (ranking.kept_earlier) d.trail.push_back("  the pod's earlier choice still fits: kept");
  for (const RankedNode& r : ranking.explained) {
    bool chosen = ranking.chosen && ranking.chosen->node == r.node;
    d.trail.push_back("  " + r.node->name() + ": " +
                      Describe(r, primary.resource, placement.strategy) +
                      (r.fits && !chosen ? " (ranked lower)" : ""));
  }
  if (ranking.examined > ranking.explained.size()) {
    d.trail.push_back("  ... " + std::to_string(ranking.examined - ranking.explained.size()) +
                      " more nodes examined");
  }
  if (ranking.offering > ranking.examined) {
    d.trail.push_back("  " + std::to_string(ranking.offering - ranking.examined) +
                      " more nodes offer " + primary.resource +
                      ", not examined: none could rank higher or fit");
  }
}

void SelectNode(const PodRequest& pod, const PlanContext& context,
                const SchedulingConstraints& constraints, const std::vector<NodeAsk>& asks,
                Decision& d) {
  const PlacementPolicy& placement = context.policy.placement;
  const NodeAsk& primary = asks.front();
  const ComputeRequest compute = WithResourceDefaults(pod, d.resource_defaults);
  NodeRanking ranking =
      RankNodes(context, constraints, asks, compute, PreferredHostname(pod.spec));
  if (context.explain) Explain(ranking, primary, placement, d);
  const Digits count(primary.count);
  if (!ranking.chosen) {
    d.tally.Mark(DecisionPoint::kPlacementNone);
    const std::string what = Joined({count, " ", primary.resource});
    // One warning per problem: an earlier stage that found nothing free has said so already.
    // A pod without GPUs is the scheduler's to place.
    if (d.warnings.empty() && primary.count > 0) {
      DeviceFilter filter = PlacementFilter(placement);
      std::string passing = filter.Active() ? " (placement filter: " + Describe(filter) + ")" : "";
      d.warnings.push_back("gpuadmit: " + pod.name + ": no node has " + what +
                           " free that the pod may use" + passing + "; no node affinity added");
    }
    d.trail.push_back("No node can take " + what + " now: no node affinity (" +
                      std::to_string(ranking.offering) + " nodes offer it)");
    if (context.explain) d.trail.push_back("==========================");
    return;
  }
  if (placement.strategy == PlacementStrategy::kMostIdle && ranking.chosen->idle == 0) {
    // Every candidate's GPUs are busy by the metrics: no node is better than the scheduler's.
    d.tally.Mark(DecisionPoint::kPlacementNoIdle);
    d.trail.push_back("No node that can take " + Joined({count, " ", primary.resource}) +
                      " has an idle one: left to the scheduler (no node affinity)");
    if (context.explain) d.trail.push_back("==========================");
    return;
  }
  d.tally.Mark(DecisionPoint::kPlacementChosen);
  const NodeInventory& node = *ranking.chosen->node;
  const std::string& host = HostnameOf(node);
  d.node = node.name();
  bool required = placement.affinity == AffinityMode::kRequired;
  // The pin, built where it goes: a braced list would copy it.
  NodeSelectorRequirement* pin = nullptr;
  if (required) {
    pin = &d.required.emplace_back();
  } else {
    PreferredTerm& term = d.preferred.emplace_back();
    term.weight = placement.preferred_weight;
    pin = &term.requirements.emplace_back();
  }
  pin->key.assign(kHostnameLabel);
  pin->op.assign("In");
  pin->values.emplace_back(host);
  // The devices are counted on the node the pod is steered to, replacing what an earlier
  // stage counted elsewhere, so the reservation and the affinity agree.
  for (const NodeAsk& a : asks) {
    if (a.count == 0) continue;  // a pod without GPUs: nothing to count on
    auto it = std::find_if(d.claims.begin(), d.claims.end(),
                           [&](const Claim& c) { return c.resource == a.resource; });
    CountOn(it != d.claims.end() ? *it : d.claims.emplace_back(), node, a.resource, a.count,
            context.policy);
  }
  // A pinned pod can go nowhere else: its cpu and memory are reserved too, so that admissions
  // before the watch shows it do not pin more there than the node can run.
  if (required) {
    const ComputeRequest free = node.ComputeFree();
    if (compute.cpu_milli > 0 && node.facts->compute.cpu_milli != 0) {
      d.claims.push_back({node.name(), std::string(kCpuResource), compute.cpu_milli, free.cpu_milli});
    }
    if (compute.memory_bytes > 0 && node.facts->compute.memory_bytes != 0) {
      d.claims.push_back(
          {node.name(), std::string(kMemoryResource), compute.memory_bytes, free.memory_bytes});
    }
  }
  // "kubernetes.io/hostname In [gpu-1], preferred, weight 100"
  const Digits weight(placement.preferred_weight);
  const std::initializer_list<std::string_view> affinity = {
      kHostnameLabel,
      " In [",
      host,
      "], ",
      required ? "required" : "preferred, weight ",
      required ? std::string_view() : std::string_view(weight)};
  if (context.explain) {
    std::string line;
    AppendAll(line, affinity);
    d.trail.push_back("Selected node '" + node.name() +
                      "': " + Describe(*ranking.chosen, primary.resource, placement.strategy));
    d.trail.push_back("  affinity " + line);
    if (primary.count > 0) {
      d.trail.push_back(Joined({"  counts on ", count, " ", primary.resource, " of ", node.name()}));
    }
    if (!ranking.stranding.empty()) d.trail.push_back("  " + ranking.stranding);
    d.trail.push_back("==========================");
    return;
  }
  // Every GPU pod pays for this line: its parts are gathered here and appended out of line.
  std::string& line = d.trail.emplace_back();
  const bool gpus = primary.count > 0;
  AppendAll(line, {"placement (", StrategyName(placement.strategy), "): ", node.name(), " for ",
                   gpus ? std::string_view(count) : "a pod without GPUs", gpus ? " " : "",
                   gpus ? std::string_view(primary.resource) : "",
                   ranking.kept_earlier ? " (kept)" : "", ", ", Digits(ranking.weighed), " of ",
                   Digits(ranking.offering), " nodes weighed; "});
  AppendAll(line, affinity);
  if (!ranking.stranding.empty()) AppendAll(line, {"; ", ranking.stranding});
}

// A node offering no GPU resource that can take the pod: it strands no GPU there.
const NodeInventory* NodeWithoutGpus(const PodRequest& pod, const PlanContext& context) {
  for (const NodeInventory& node : context.snapshot.nodes()) {
    if (!HasManagedResource(node.facts->allocatable) && CanRunOn(pod.constraints, *node.facts) &&
        node.FitsCompute(pod.needs.compute)) {
      return &node;
    }
  }
  return nullptr;
}

// A Pod asking for no GPU, with placement.podsWithoutGpus: ranked as a pod asking 0 whole GPUs,
// so its cpu and memory go where they strand the least GPUs for the workload mix.
void PlaceWithoutGpus(const PodRequest& pod, const PlanContext& context, const PlanState& state,
                      Decision& d) {
  if (!pod.is_pod || state.opted_out || !context.policy.placement.enabled ||
      !pod.spec["nodeName"].string().empty() || pod.needs.compute == ComputeRequest{}) {
    return;
  }
  if (const NodeInventory* node = NodeWithoutGpus(pod, context)) {
    d.trail.push_back("placement: no GPU asked, and " + node->name() +
                      ", which offers none, can take it: left to the scheduler");
    return;
  }
  const std::vector<NodeAsk> asks = {{"nvidia.com/gpu", 0}};
  SelectNode(pod, context, pod.constraints, asks, d);
}

}  // namespace

bool MountsShm(JsonView container) {
  auto mounts = container["volumeMounts"].Elements();
  return std::any_of(mounts.begin(), mounts.end(),
                     [](JsonView m) { return m["mountPath"].string() == kShmPath; });
}

void PlanPlacement(const PodRequest& pod, const PlanContext& context, PlanState& state,
                   Decision& d) {
  std::vector<NodeAsk> asks = AsksOf(state.effective());
  const Policy& policy = context.policy;
  if (asks.empty()) {
    if (policy.placement.pods_without_gpus) PlaceWithoutGpus(pod, context, state, d);
    return;  // asks for no GPU: nothing else of this stage applies
  }
  AddWorkerDefaults(pod, policy.worker_defaults, d);
  if (state.opted_out) {
    d.trail.push_back("placement: optimize is off for this pod; worker defaults only");
    return;
  }
  if (state.gated) {
    d.trail.push_back("placement: gated; the gate lifter pins the node when capacity frees");
    return;
  }
  if (!policy.placement.enabled) {
    d.trail.push_back("placement: off in the policy");
    return;
  }
  AddGpuTypePreferences(asks.front().resource, context, d);
  if (!pod.is_pod && !pod.pin_node) {
    d.trail.push_back("placement: a pod template; only Pods are steered to a node");
    return;
  }
  if (auto v = pod.Input(policy, "node-selection"); v && *v == "false") {
    d.trail.push_back("placement: node selection off for this pod (" +
                      pod.InputName(policy, "node-selection") + ": false)");
    return;
  }
  if (!pod.spec["nodeName"].string().empty()) {
    d.trail.push_back("placement: spec.nodeName is set; no node selection");
    return;
  }
  if (d.node_selector.empty() && d.required.empty() && d.tolerations.empty()) {
    SelectNode(pod, context, pod.constraints, asks, d);
    return;
  }
  SelectNode(pod, context, AsPatched(pod.constraints, d), asks, d);
}

}  // namespace gpuadmit
