#include "core/plan/estimation.h"

#include <algorithm>
#include <cctype>

#include "core/kube/quantity.h"
#include "core/plan/command_line.h"
#include "core/plan/model_memory.h"
#include "core/plan/parallelism.h"

namespace gpuadmit {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The containers whose command lines say how an inference server runs: the app containers that
// ask for a managed resource; when none does, the custom workload's GPU container, else the
// first app container (a pod that forgot its nvidia.com/gpu, which `fill` completes).
std::vector<size_t> Targets(const std::vector<ContainerNeeds>& containers) {
  std::vector<size_t> asking;
  std::optional<size_t> first_app;
  std::optional<size_t> named;
  for (size_t i = 0; i < containers.size(); ++i) {
    const ContainerNeeds& c = containers[i];
    if (c.role != ContainerRole::kApp) continue;
    if (!c.limits.empty() || !c.requests.empty()) asking.push_back(i);
    if (!first_app) first_app = i;
    if (c.field != "containers" && !named) named = i;
  }
  if (!asking.empty()) return asking;
  if (named) return {*named};
  if (first_app) return {*first_app};
  return {};
}

// The count a container asks of `resource`: its limit, else its request.
int64_t CountOf(const ContainerNeeds& c, std::string_view resource) {
  if (c.limits.contains(resource)) return Get(c.limits, resource);
  return Get(c.requests, resource);
}

// The managed resource other than nvidia.com/gpu the container asks for, "" for none.
std::string OtherResource(const ContainerNeeds& c) {
  for (const ResourceList* list : {&c.limits, &c.requests}) {
    for (const auto& [resource, n] : *list) {
      if (resource != kGpu && n > 0) return resource;
    }
  }
  return "";
}

// Checks one container's nvidia.com/gpu against its parallelism, as the policy says.
void CheckCount(const PodRequest& pod, const Policy& policy, size_t index, const Parallelism& p,
                PlanState& state, Decision& d) {
  const ContainerNeeds& c = state.containers()[index];
  const int64_t world = p.WorldSize();
  const std::string who = "container " + c.name;
  const std::string why = p.Describe();
  d.trail.push_back(who + ": world size " + std::to_string(world) + " = " + why);
  const int64_t asked = CountOf(c, kGpu);
  if (asked == world) {
    d.trail.push_back("  nvidia.com/gpu " + std::to_string(asked) + " matches");
    return;
  }
  if (asked == 0) {
    if (std::string other = OtherResource(c); !other.empty()) {
      d.trail.push_back("  asks for " + other + ", not nvidia.com/gpu: count not checked");
      return;
    }
  }
  const GpuCountAction action = policy.requirements.gpu_count;
  const bool change =
      asked == 0 ? action >= GpuCountAction::kFill : action == GpuCountAction::kCorrect;
  const std::string prefix = "gpuadmit: " + pod.name + " " + who;
  if (!change) {
    d.tally.Mark(DecisionPoint::kRequirementsWarned);
    d.trail.push_back("  asks for " + std::to_string(asked) + " nvidia.com/gpu: warning only");
    d.warnings.push_back(prefix + " asks for " + std::to_string(asked) +
                         " nvidia.com/gpu but its parallelism (" + why + ") needs " +
                         std::to_string(world));
    return;
  }
  d.tally.Mark(asked == 0 ? DecisionPoint::kRequirementsFilled
                          : DecisionPoint::kRequirementsCorrected);
  d.counts.push_back({c.name, kGpu, world});
  state.SetCount(index, kGpu, world, pod.needs.overhead);
  std::string change_text =
      "nvidia.com/gpu " + std::to_string(asked) + " -> " + std::to_string(world) + " (" + why + ")";
  d.trail.push_back("  " + std::string(asked == 0 ? "filled in " : "corrected ") + change_text);
  d.warnings.push_back(prefix + ": " + change_text);
}

// The command line of each target container, read once for the stages that read them.
using CommandLines = std::vector<std::vector<std::string>>;

void PlanCounts(const PodRequest& pod, const Policy& policy, const std::vector<size_t>& targets,
                const CommandLines& lines, PlanState& state, Decision& d) {
  if (policy.requirements.gpu_count == GpuCountAction::kOff || !pod.spec.present()) return;
  const auto& inputs = pod.Inputs(policy);
  Parallelism from_inputs;
  // Most pods have no parallelism input: then the two dozen spellings are not asked for one by
  // one.
  if (std::any_of(inputs.begin(), inputs.end(),
                  [](const auto& input) { return IsParallelismInput(input.first); })) {
    from_inputs = ParallelismFromInputs(
        [&](std::string_view name) -> std::optional<std::pair<std::string, std::string>> {
          for (const auto& [key, entry] : inputs) {
            if (key == name) {
              return std::make_pair(std::string(entry->first), std::string(entry->second));
            }
          }
          return std::nullopt;
        });
  }
  for (const std::string& problem : from_inputs.problems) {
    d.warnings.push_back("gpuadmit: " + pod.name + ": " + problem);
  }
  from_inputs.problems.clear();
  for (size_t t = 0; t < targets.size(); ++t) {
    const size_t index = targets[t];
    Parallelism p = ParallelismFromArgs(lines[t]);
    for (const std::string& problem : p.problems) {
      d.trail.push_back("container " + state.containers()[index].name + ": " + problem);
    }
    p.FillFrom(from_inputs);
    if (p.Explicit()) CheckCount(pod, policy, index, p, state, d);
  }
}

// The model the pod serves and where that was read, or nullopt.
std::optional<std::pair<std::string, std::string>> ModelOf(const PodRequest& pod,
                                                           const Policy& policy,
                                                           const std::vector<size_t>& targets,
                                                           const CommandLines& lines,
                                                           const PlanState& state) {
  if (const auto* input = pod.InputEntry(policy, "model")) {
    return std::make_pair(std::string(input->second), std::string(input->first));
  }
  if (!pod.spec.present()) return std::nullopt;
  for (size_t t = 0; t < targets.size(); ++t) {
    if (auto model = ServedModel(lines[t])) {
      return std::make_pair(*model, "args of container " + state.containers()[targets[t]].name);
    }
  }
  return std::nullopt;
}

void PlanMemory(const PodRequest& pod, const Policy& policy, const std::vector<size_t>& targets,
                const CommandLines& lines, PlanState& state, Decision& d) {
  if (const auto* input = pod.InputEntry(policy, "gpu-memory")) {
    auto mib = ParseMemoryMib(input->second);
    if (mib.ok()) {
      state.gpu_memory_mib = mib.value();
      d.trail.push_back("GPU memory need " + std::to_string(mib.value()) + " MiB per GPU (" +
                        std::string(input->first) + ")");
      return;
    }
    d.warnings.push_back("gpuadmit: " + pod.name + ": " + std::string(input->first) + " " +
                         mib.error().message + ": ignored");
  }
  auto model = ModelOf(pod, policy, targets, lines, state);
  if (!model) return;  // unknown: the default flow then never picks MIG
  const int64_t gpus = std::max<int64_t>(Get(state.effective(), kGpu), 1);
  ModelMemory m = ModelMemoryMib(model->first, policy.requirements, gpus);
  state.gpu_memory_mib = m.mib;
  std::string split;
  if (m.split_over > 0) {
    split = " (" + std::to_string(m.rule_mib) + " MiB per GPU over " +
            std::to_string(m.split_over) + " GPUs, on this pod's " + std::to_string(gpus) + ")";
  }
  d.trail.push_back(
      "GPU memory need " + std::to_string(m.mib) + " MiB per GPU: model " + model->first + " (" +
      model->second + ") " +
      (m.rule.empty() ? "matches no rule: the default" : "matches \"" + m.rule + "\"") + split);
}

}  // namespace

void PlanRequirements(const PodRequest& pod, const PlanContext& context, PlanState& state,
                      Decision& d) {
  const Policy& policy = context.policy;
  if (const auto* optimize = pod.InputEntry(policy, "optimize");
      optimize && Lower(std::string(optimize->second)) == "false") {
    state.opted_out = true;
    d.trail.push_back(std::string(optimize->first) +
                      ": \"false\": GPU count and sharing left as asked");
    return;
  }
  std::vector<size_t> targets = Targets(state.containers());
  // A pod asking for no GPU is read only when the policy fills counts in: under `warn`, a flag
  // such as --dp in some CPU pod's command line is no reason to warn about it.
  const bool asks_gpus = !state.effective().empty();
  if (!asks_gpus && policy.requirements.gpu_count < GpuCountAction::kFill) return;
  CommandLines lines;  // none for a container the spec lacks (CommandLineOf)
  lines.reserve(targets.size());
  for (size_t index : targets) {
    lines.push_back(CommandLineOf(ContainerObject(pod.spec, state.containers()[index])));
  }
  PlanCounts(pod, policy, targets, lines, state, d);
  if (!state.effective().empty()) PlanMemory(pod, policy, targets, lines, state, d);
}

}  // namespace gpuadmit
