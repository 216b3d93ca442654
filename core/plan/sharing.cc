#include "core/plan/sharing.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/kube/gpu_equivalents.h"
#include "core/kube/mig_resource.h"
#include "core/plan/command_line.h"
#include "core/plan/mig_catalog.h"
#include "core/plan/sharing_rules.h"
#include "core/plan/workload_type.h"

namespace gpuadmit {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";
// The NVIDIA device plugin's name for a replica of a shared GPU (sharing.*.renameByDefault).
constexpr char kShared[] = "nvidia.com/gpu.shared";
// GFD's label naming the node's sharing strategy: none, time-slicing or mps.
constexpr char kStrategyLabel[] = "nvidia.com/gpu.sharing-strategy";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A mode to try, why, and whether failing to apply it deserves a warning.
struct Choice {
  SharingMode mode = SharingMode::kExclusive;
  std::string why;          // "rule small-inference", "gpuadmit.io/sharing-mode", ...
  std::string mig_profile;  // an explicit profile for kMig; "" for the smallest that fits
  bool warn = true;
};

struct Stage {
  const PodRequest& pod;
  const PlanContext& context;
  PlanState& state;
  Decision& d;

  // The workload type, once read: the pod's own, else the detected one; lower case, "" none.
  std::optional<std::string> type_;
  bool detection_ran_ = false;
  DetectedWorkloadType detected_;

  const Policy& policy() const { return context.policy; }
  std::string Input(std::string_view key) const { return pod.Input(policy(), key).value_or(""); }
  std::string InputKey(std::string_view key) const { return pod.InputName(policy(), key); }

  // What the GPU containers run, as core/plan/workload_type.h matches it.
  DetectedWorkloadType Detect() const {
    std::vector<JsonView> gpu_containers;
    for (const ContainerNeeds& c : state.containers()) {
      if (!c.limits.empty() || !c.requests.empty()) {
        gpu_containers.push_back(ContainerObject(pod.spec, c));
      }
    }
    std::vector<std::vector<std::string>> words(gpu_containers.size());
    std::vector<ContainerLaunch> launches(gpu_containers.size());
    for (size_t i = 0; i < gpu_containers.size(); ++i) {
      JsonView c = gpu_containers[i];
      words[i] = CommandLineOf(c);
      launches[i] = {c["name"].string(), c["image"].string(), words[i]};
    }
    return DetectWorkloadType(launches, policy().workload_detection);
  }

  // The type the sharing rules and the default flow read: the workload-type label or
  // annotation when the pod has one, else, when the policy lets it, the detected type.
  const std::string& WorkloadType() {
    if (type_) return *type_;
    type_ = Lower(Input("workload-type"));
    if (type_->empty() && policy().workload_detection.enabled && pod.spec.present()) {
      detection_ran_ = true;
      detected_ = Detect();
      *type_ = detected_.type;
    }
    return *type_;
  }

  // The detection's trail line, and its annotation when it named a type.
  void RecordDetection() {
    if (!detection_ran_) return;
    if (!detected_.matched()) {
      d.trail.push_back("workload type: none declared, none detected");
      return;
    }
    const std::string& type = *type_;
    d.trail.push_back("workload type: " + (type.empty() ? std::string("unknown") : type) + ", " +
                      detected_.why);
    if (!type.empty()) {
      d.annotations.emplace_back(policy().Annotation("detected-workload-type"), type);
    }
  }

  // The pod is left as it asked; `why` goes to the trail, and to the warnings when it should.
  void Unchanged(const Choice& choice, const std::string& why) {
    d.tally.Mark(DecisionPoint::kSharingNotApplied);
    d.trail.push_back("  " + std::string(SharingModeName(choice.mode)) + " not applied: " + why);
    if (choice.warn) {
      d.warnings.push_back("gpuadmit: " + pod.name + " keeps nvidia.com/gpu (" +
                           std::string(SharingModeName(choice.mode)) + " from " + choice.why +
                           " not applied: " + why + ")");
    }
  }

  // The count of `to` the pod asks for once nvidia.com/gpu is replaced by it.
  int64_t CountAfterSwap(const std::string& to) const {
    PlanState swapped = state;
    swapped.Swap(kGpu, to, pod.needs.overhead);
    return Get(swapped.effective(), to);
  }

  void Apply(const Choice& choice, const std::string& to, const NodeInventory& node) {
    const int64_t gpus = Get(state.effective(), kGpu);
    const std::string original = std::string(kGpu) + "=" + std::to_string(gpus);
    d.swaps.push_back({kGpu, to});
    state.Swap(kGpu, to, pod.needs.overhead);
    const int64_t count = Get(state.effective(), to);
    CountOn(d.claims.emplace_back(), node, to, count, policy());
    state.mode = choice.mode;
    d.tally.Mark(DecisionPoint::kSharingApplied);
    d.tally.MarkMode(choice.mode);
    const double saved =
        static_cast<double>(gpus) - GpuEquivalents(to, count, ReplicasPerGpu(*node.facts));
    if (saved > 0) d.tally.saved_micro_gpus = std::llround(saved * kMicroGpusPerGpu);
    const std::string mode(SharingModeName(choice.mode));
    d.annotations.emplace_back(policy().Annotation("applied-sharing-mode"), mode);
    d.annotations.emplace_back(policy().Annotation("original-request"), original);
    d.trail.push_back("  " + std::string(kGpu) + " -> " + to + " x" + std::to_string(count) +
                      ": free on " + node.name());
    d.warnings.push_back("gpuadmit: " + pod.name + " shares a GPU (" + mode + ", " + choice.why +
                         "): " + kGpu + " -> " + to);
  }

  // The smallest MIG profile offered with at least `need_mib` (nominal memory) that is free on
  // a node the pod may use, and that node; nullopt when none is.
  std::optional<std::pair<std::string, const NodeInventory*>> SmallestFreeMig(int64_t need_mib) {
    std::vector<MigProfile> fitting;
    for (std::string_view resource : context.snapshot.ResourcesOffered()) {
      auto p = ParseMigResource(resource);
      if (p && MigProfileMemoryMib(p->name) >= need_mib) fitting.push_back(*p);
    }
    std::sort(fitting.begin(), fitting.end(),
              [](const MigProfile& a, const MigProfile& b) { return a.SmallerThan(b); });
    for (const MigProfile& p : fitting) {
      std::string resource = MigResourceName(p);
      if (const NodeInventory* node =
              FindFreeNode(pod, context, resource, CountAfterSwap(resource))) {
        return std::make_pair(resource, node);
      }
    }
    return std::nullopt;
  }

  void ApplyMig(const Choice& choice) {
    if (choice.mig_profile.empty()) {
      const int64_t need = state.gpu_memory_mib;
      if (auto found = SmallestFreeMig(need)) {
        d.trail.push_back("  smallest free MIG profile with at least " + std::to_string(need) +
                          " MiB: " + found->first);
        Apply(choice, found->first, *found->second);
        return;
      }
      Unchanged(choice, "no MIG profile with at least " + std::to_string(need) +
                            " MiB is free on a node this pod may use");
      return;
    }
    std::string name = choice.mig_profile;
    if (name.starts_with(kMigResourcePrefix)) name = name.substr(kMigResourcePrefix.size());
    if (name.starts_with("mig-")) name = name.substr(4);
    auto profile = ParseMigResource(std::string(kMigResourcePrefix) + name);
    if (!profile) {
      Unchanged(choice, "\"" + choice.mig_profile + "\" is not a MIG profile such as 1g.10gb");
      return;
    }
    std::string resource = MigResourceName(*profile);
    const NodeInventory* node = FindFreeNode(pod, context, resource, CountAfterSwap(resource));
    if (node == nullptr) {
      Unchanged(choice, resource + " is free on no node this pod may use");
      return;
    }
    Apply(choice, resource, *node);
  }

  static bool Offers(const NodeInventory& node, SharingMode mode) {
    const GpuFacts& gpu = node.facts->gpu;
    if (mode == SharingMode::kMps) return gpu.sharing_strategy == "mps" && gpu.mps_capable;
    return gpu.sharing_strategy == "time-slicing";
  }

  // Whether some node offers `mode` at all, free or not.
  bool OfferedAnywhere(SharingMode mode) const {
    auto nodes = context.snapshot.NodesOffering(kShared);
    return std::any_of(nodes.begin(), nodes.end(),
                       [&](const NodeInventory* n) { return Offers(*n, mode); });
  }

  void ApplyShared(const Choice& choice) {
    const std::string strategy(SharingModeName(choice.mode));
    auto asked = pod.constraints.node_selector.find(kStrategyLabel);
    if (asked != pod.constraints.node_selector.end() && asked->second != strategy) {
      Unchanged(choice,
                "its nodeSelector asks for " + std::string(kStrategyLabel) + "=" + asked->second);
      return;
    }
    const int64_t count = CountAfterSwap(kShared);
    const NodeInventory* node =
        FindFreeNodeWhere(pod, context, kShared, count,
                          [&](const NodeInventory& n) { return Offers(n, choice.mode); });
    if (node == nullptr) {
      std::string capped;
      if (choice.mode == SharingMode::kMps && policy().sharing.mps_max_clients) {
        capped = " within " + std::to_string(*policy().sharing.mps_max_clients) +
                 " MPS clients per GPU";
      }
      Unchanged(choice, "no node labelled " + std::string(kStrategyLabel) + "=" + strategy +
                            " has " + kShared + " free for this pod" + capped);
      return;
    }
    d.node_selector[kStrategyLabel] = strategy;
    Apply(choice, kShared, *node);
    if (choice.mode == SharingMode::kMps) AddMpsSettings();
  }

  // The policy's MPS client settings, as the environment the CUDA driver reads in the client.
  // A one-GPU pod sees its GPU as device 0.
  void AddMpsSettings() {
    const SharingPolicy& s = policy().sharing;
    if (s.mps_active_thread_percentage) {
      d.env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                         std::to_string(*s.mps_active_thread_percentage));
    }
    if (s.mps_memory_limit_mib) {
      d.env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                         "0=" + std::to_string(*s.mps_memory_limit_mib) + "M");
    }
    for (const auto& [name, value] : d.env) d.trail.push_back("  MPS: " + name + "=" + value);
  }

  // Why `mode` may not be used for this pod, "" when it may.
  std::string Disabled(SharingMode mode) const {
    const SharingPolicy& s = policy().sharing;
    if (mode == SharingMode::kMig && !s.enable_mig) return "the policy disables MIG";
    if (mode == SharingMode::kMps && !s.enable_mps) return "the policy disables MPS";
    if (mode == SharingMode::kMps && Lower(Input("mps-enabled")) == "false") {
      return InputKey("mps-enabled") + " is \"false\"";
    }
    if (mode == SharingMode::kTimeSlicing && !s.enable_time_slicing) {
      return "the policy disables time-slicing";
    }
    return "";
  }

  // The default decision flow, for a pod no rule matched; nullopt: nothing to try.
  std::optional<Choice> DefaultFlow(const SharingFacts& facts) {
    const SharingPolicy& s = policy().sharing;
    const std::string& type = facts.workload_type;
    if (type == "training") return Choice{SharingMode::kExclusive, "default flow: training"};
    if (facts.gpus == 1 && facts.memory_mib > 0 && facts.memory_mib < s.mig_below_mib &&
        Disabled(SharingMode::kMig).empty()) {
      std::string need = std::to_string(facts.memory_mib) + " MiB";
      if (SmallestFreeMig(facts.memory_mib)) {
        return Choice{
            SharingMode::kMig,
            "default flow: one GPU, " + need + " < " + std::to_string(s.mig_below_mib) + " MiB", "",
            false};
      }
      d.trail.push_back("  default flow: no MIG profile with at least " + need +
                        " free on a node this pod may use");
    }
    auto shared = [&](SharingMode mode) -> std::optional<Choice> {
      if (std::string why = Disabled(mode); !why.empty()) {
        d.trail.push_back("  default flow: " + type + " would use " +
                          std::string(SharingModeName(mode)) + ", but " + why);
        return std::nullopt;
      }
      // A cluster without such nodes is not worth a warning on every pod.
      return Choice{mode, "default flow: " + type, "", OfferedAnywhere(mode)};
    };
    std::optional<Choice> choice;
    if (type == "inference" || type == "serving") choice = shared(SharingMode::kMps);
    if (type == "development" || type == "batch") choice = shared(SharingMode::kTimeSlicing);
    if (choice) return choice;
    return Choice{SharingMode::kExclusive, "default flow: nothing else applies"};
  }

  // The pod's explicit sharing-mode, else the first matching rule, else the default flow.
  std::optional<Choice> Choose(const SharingFacts& facts) {
    if (auto text = pod.Input(policy(), "sharing-mode")) {
      if (auto mode = ParseSharingMode(*text)) {
        return Choice{*mode, InputKey("sharing-mode"), Input("mig-profile"), true};
      }
      d.warnings.push_back("gpuadmit: " + pod.name + ": " + InputKey("sharing-mode") +
                           " \"" + *text +
                           "\" is not exclusive, mig, mps or time-slicing: ignored");
    }
    if (const SharingRule* rule = FirstMatchingRule(policy().sharing.rules, facts)) {
      std::string profile = Input("mig-profile");
      return Choice{rule->mode, "rule " + rule->name, profile.empty() ? rule->mig_profile : profile,
                    true};
    }
    if (policy().sharing.default_flow) return DefaultFlow(facts);
    return std::nullopt;
  }

  // The MIG condition of the default flow (one GPU, a memory need below sharing.migBelow,
  // training excluded), counted whether or not MIG is then chosen and free.
  void CountMigEligible(int64_t gpus) {
    const int64_t mib = state.gpu_memory_mib;
    if (gpus != 1 || mib <= 0 || mib >= policy().sharing.mig_below_mib) return;
    if (WorkloadType() == "training") return;
    d.tally.mig_eligible = 1;
  }

  void Run() {
    const int64_t gpus = Get(state.effective(), kGpu);
    CountMigEligible(gpus);
    if (!policy().sharing.enabled || state.opted_out || gpus <= 0) return;
    for (const auto& [resource, n] : state.effective()) {
      if (resource == kShared || ParseMigResource(resource)) {
        d.trail.push_back("sharing: already asks for " + resource + ": left as asked");
        return;
      }
    }
    std::string sharing = Lower(Input("sharing"));
    if (sharing == "disabled" || sharing == "false") {
      d.trail.push_back("sharing: " + InputKey("sharing") + " is \"" + sharing + "\": exclusive");
      d.tally.MarkMode(SharingMode::kExclusive);
      return;
    }
    bool opted_in = sharing == "enabled" || sharing == "true";
    if (!sharing.empty() && !opted_in) {
      d.warnings.push_back("gpuadmit: " + pod.name + ": " + InputKey("sharing") + " \"" +
                           Input("sharing") + "\" is not enabled or disabled: ignored");
    }
    if (policy().sharing.opt_in && !opted_in) {
      d.trail.push_back("sharing: exclusive (the policy shares only pods with " +
                        policy().Annotation("sharing") + ": enabled)");
      d.tally.MarkMode(SharingMode::kExclusive);
      return;
    }
    if (opted_in) d.trail.push_back("sharing: " + InputKey("sharing") + " is \"enabled\"");
    const std::string& type = WorkloadType();
    RecordDetection();
    SharingFacts facts{pod.ns, &pod.labels, type, gpus, state.gpu_memory_mib};
    std::optional<Choice> choice = Choose(facts);
    if (!choice) return;
    d.trail.push_back("sharing: " + std::string(SharingModeName(choice->mode)) + " (" +
                      choice->why + ")");
    if (choice->mode == SharingMode::kExclusive) {
      d.tally.MarkMode(SharingMode::kExclusive);
      return;
    }
    if (std::string why = Disabled(choice->mode); !why.empty()) {
      Unchanged(*choice, why);
      return;
    }
    if (gpus != 1) {
      // The device plugin refuses MPS requests above one, time-sliced replicas of one request
      // may be the same GPU, and MIG instances cannot be joined: sharing is for one-GPU pods.
      Unchanged(*choice,
                "sharing modes are for one-GPU pods; this one asks for " + std::to_string(gpus));
      return;
    }
    if (choice->mode == SharingMode::kMig) {
      ApplyMig(*choice);
    } else {
      ApplyShared(*choice);
    }
  }
};

}  // namespace

void PlanSharing(const PodRequest& pod, const PlanContext& context, PlanState& state,
                 Decision& decision) {
  Stage{pod, context, state, decision}.Run();
}

}  // namespace gpuadmit
