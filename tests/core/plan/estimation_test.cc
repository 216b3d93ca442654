// Plan stage 1: the GPU count a pod's parallelism implies, checked as the policy says, and its
// GPU memory need per GPU.
#include "core/plan/estimation.h"

#include <gtest/gtest.h>

#include <memory>

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kGpu[] = "nvidia.com/gpu";

struct Outcome {
  std::unique_ptr<PodRequest> request;  // what `state` starts from: it must outlive it
  Decision d;
  PlanState state;
};

// Runs the requirements stage over {"metadata": ..., "spec": ...}.
Outcome Requirements(const json& pod, const Policy& policy = {},
                     std::string_view gpu_container = {}) {
  auto request = std::make_unique<PodRequest>(PodRequest::From(
      "default", "Pod default/p", pod.at("spec"), &pod.at("metadata"), true, gpu_container));
  InventorySnapshot snapshot;
  PlanState state{request->needs.containers, request->needs.effective};
  Decision d;
  PlanRequirements(*request, PlanContext{snapshot, policy}, state, d);
  return {std::move(request), std::move(d), std::move(state)};
}

// A pod whose one container runs `args` and asks for `limits` (and the same requests).
json ServerPod(json args, json limits = {{kGpu, "1"}}, json annotations = json::object()) {
  json container = {{"name", "vllm"}, {"image", "vllm/vllm-openai"}, {"args", std::move(args)}};
  if (!limits.empty()) container["resources"] = {{"limits", limits}, {"requests", limits}};
  return {{"metadata", {{"name", "p"}, {"annotations", std::move(annotations)}}},
          {"spec", {{"containers", json::array({std::move(container)})}}}};
}

Policy WithCountAction(GpuCountAction action) {
  Policy p;
  p.requirements.gpu_count = action;
  return p;
}

std::vector<std::string> Counts(const Decision& d) {
  std::vector<std::string> out;
  for (const CountChange& c : d.counts) {
    out.push_back(c.container + " " + c.resource + "=" + std::to_string(c.count));
  }
  return out;
}

TEST(GpuCount, EachActionOnAWrongAMissingAndARightCount) {
  const std::string wrong_warning =
      "gpuadmit: Pod default/p container vllm asks for 2 nvidia.com/gpu but its parallelism (tp "
      "4 (args)) needs 4";
  const std::string corrected =
      "gpuadmit: Pod default/p container vllm: nvidia.com/gpu 2 -> 4 (tp 4 (args))";
  const std::string filled =
      "gpuadmit: Pod default/p container vllm: nvidia.com/gpu 0 -> 4 (tp 4 (args))";
  struct Case {
    GpuCountAction action;
    json limits;
    std::vector<std::string> counts;
    std::vector<std::string> warnings;
  } cases[] = {
      {GpuCountAction::kOff, {{kGpu, "2"}}, {}, {}},
      {GpuCountAction::kWarn, {{kGpu, "2"}}, {}, {wrong_warning}},
      {GpuCountAction::kFill, {{kGpu, "2"}}, {}, {wrong_warning}},
      {GpuCountAction::kCorrect, {{kGpu, "2"}}, {"vllm nvidia.com/gpu=4"}, {corrected}},
      {GpuCountAction::kOff, json::object(), {}, {}},
      // A pod asking for no GPU is read only when counts are filled in.
      {GpuCountAction::kWarn, json::object(), {}, {}},
      {GpuCountAction::kFill, json::object(), {"vllm nvidia.com/gpu=4"}, {filled}},
      {GpuCountAction::kCorrect, json::object(), {"vllm nvidia.com/gpu=4"}, {filled}},
      {GpuCountAction::kWarn, {{kGpu, "4"}}, {}, {}},
      {GpuCountAction::kCorrect, {{kGpu, "4"}}, {}, {}},
  };
  for (const Case& c : cases) {
    Outcome o =
        Requirements(ServerPod({"serve", "m", "--tp", "4"}, c.limits), WithCountAction(c.action));
    std::string label = std::to_string(static_cast<int>(c.action)) + " " + c.limits.dump();
    EXPECT_EQ(Counts(o.d), c.counts) << label;
    EXPECT_EQ(o.d.warnings, c.warnings) << label;
    int64_t expected = c.counts.empty() ? Get(o.state.containers()[0].limits, kGpu) : 4;
    EXPECT_EQ(Get(o.state.effective(), kGpu), expected) << label;
  }
}

TEST(GpuCount, ACorrectionChangesLimitsAndTheRequestsThatNameTheResource) {
  json pod = ServerPod({"--tp", "4"}, {{kGpu, "2"}});
  pod["spec"]["containers"][0]["resources"].erase("requests");
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
  EXPECT_EQ(o.state.containers()[0].limits, (ResourceList{{kGpu, 4}}));
  EXPECT_EQ(o.state.containers()[0].requests, ResourceList{});
  EXPECT_EQ(o.state.effective(), (ResourceList{{kGpu, 4}}));
}

TEST(GpuCount, OnlyTheContainersAskingForGpusAreRead) {
  json pod = ServerPod({"serve", "m", "--tp", "2"}, {{kGpu, "2"}});
  pod["spec"]["containers"].push_back({{"name", "proxy"}, {"args", {"--tp", "8"}}});
  pod["spec"]["initContainers"] = {{{"name", "warmup"}, {"args", {"--tp", "8"}}}};
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
  EXPECT_TRUE(o.d.counts.empty());
  EXPECT_TRUE(o.d.warnings.empty());
  EXPECT_EQ(o.d.trail,
            (std::vector<std::string>{"container vllm: world size 2 = tp 2 (args)",
                                      "  nvidia.com/gpu 2 matches",
                                      "GPU memory need 8000 MiB per GPU: model m (args "
                                      "of container vllm) matches no rule: the default"}));
}

TEST(GpuCount, WhenNoContainerAsksForGpusTheFirstAppContainerIsRead) {
  json pod = ServerPod({"serve", "m", "--tp", "2"}, json::object());
  pod["spec"]["containers"].push_back({{"name", "second"}, {"args", {"--tp", "8"}}});
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kFill));
  EXPECT_EQ(Counts(o.d), std::vector<std::string>{"vllm nvidia.com/gpu=2"});
}

TEST(GpuCount, ACustomWorkloadsRunnerIsTheContainerWhenNoneAsks) {
  json pod = {{"metadata", json::object()},
              {"spec",
               {{"containers", {{{"name", "sidecar"}}}},
                {"runner", {{"name", "ome-container"}, {"args", {"--tp-size=4"}}}}}}};
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kFill), "runner");
  EXPECT_EQ(Counts(o.d), std::vector<std::string>{"ome-container nvidia.com/gpu=4"});
  EXPECT_EQ(o.state.effective(), (ResourceList{{kGpu, 4}}));
}

TEST(GpuCount, AShellStringIsSplitIntoArguments) {
  json pod =
      ServerPod({"vllm serve meta-llama/Llama-3-70B --tp 4 --pp 2 && sleep 1"}, {{kGpu, "8"}});
  pod["spec"]["containers"][0]["command"] = {"/bin/sh", "-c"};
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
  EXPECT_TRUE(o.d.counts.empty());
  EXPECT_EQ(o.d.trail.front(), "container vllm: world size 8 = tp 4 (args) x pp 2 (args)");
  EXPECT_EQ(o.state.gpu_memory_mib, 20000);
}

TEST(GpuCount, AnnotationsAndLabelsUnderEitherPrefixGiveParallelism) {
  struct Case {
    const char* where;  // "annotations" or "labels"
    const char* key;
    const char* source;
  } cases[] = {
      {"annotations", "gpuadmit.io/tp-size", "tp 4 (gpuadmit.io/tp-size)"},
      {"annotations", "gpu-autoscaler.io/tp_size", "tp 4 (gpu-autoscaler.io/tp_size)"},
      {"annotations", "gpuadmit.io/tpsize", "tp 4 (gpuadmit.io/tpsize)"},
      {"labels", "gpuadmit.io/tensor-parallel-size", "tp 4 (gpuadmit.io/tensor-parallel-size)"},
      {"labels", "gpu-autoscaler.io/tp", "tp 4 (gpu-autoscaler.io/tp)"},
  };
  for (const Case& c : cases) {
    json pod = ServerPod(json::array(), {{kGpu, "1"}});
    pod["metadata"][c.where] = {{c.key, "4"}};
    Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
    EXPECT_EQ(Counts(o.d), std::vector<std::string>{"vllm nvidia.com/gpu=4"}) << c.key;
    EXPECT_EQ(o.d.trail.front(), std::string("container vllm: world size 4 = ") + c.source);
  }
}

TEST(GpuCount, AnAnnotationBeatsALabelAndArgumentsBeatBoth) {
  json pod = ServerPod({"serve", "m", "--pp", "2"}, {{kGpu, "1"}},
                       {{"gpuadmit.io/tp-size", "4"}, {"gpuadmit.io/pp-size", "3"}});
  pod["metadata"]["labels"] = {{"gpuadmit.io/tp-size", "8"}};
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
  EXPECT_EQ(Counts(o.d), std::vector<std::string>{"vllm nvidia.com/gpu=8"});
  EXPECT_EQ(o.d.trail.front(),
            "container vllm: world size 8 = tp 4 (gpuadmit.io/tp-size) x pp 2 (args)");
}

TEST(GpuCount, NothingIsCheckedWithoutAnExplicitParallelism) {
  Outcome o = Requirements(ServerPod({"serve", "m"}, {{kGpu, "2"}}),
                           WithCountAction(GpuCountAction::kCorrect));
  EXPECT_TRUE(o.d.counts.empty());
  EXPECT_TRUE(o.d.warnings.empty());
}

TEST(GpuCount, AnExplicitSizeOfOneFillsInOneGpu) {
  Outcome o = Requirements(ServerPod({"serve", "m", "--tp", "1"}, json::object()),
                           WithCountAction(GpuCountAction::kFill));
  EXPECT_EQ(Counts(o.d), std::vector<std::string>{"vllm nvidia.com/gpu=1"});
}

TEST(GpuCount, AContainerOnMigOrSharedGpusIsNotChecked) {
  for (const char* resource : {"nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"}) {
    Outcome o = Requirements(ServerPod({"--tp", "2"}, {{resource, "1"}}),
                             WithCountAction(GpuCountAction::kCorrect));
    EXPECT_TRUE(o.d.counts.empty()) << resource;
    EXPECT_TRUE(o.d.warnings.empty()) << resource;
    EXPECT_EQ(o.d.trail[1],
              std::string("  asks for ") + resource + ", not nvidia.com/gpu: count not checked");
  }
}

TEST(GpuCount, AnUnreadableAnnotationIsAWarningAndAnUnreadableArgumentATrailLine) {
  json pod = ServerPod({"--pp", "x"}, {{kGpu, "1"}}, {{"gpuadmit.io/tp-size", "four"}});
  Outcome o = Requirements(pod, WithCountAction(GpuCountAction::kCorrect));
  EXPECT_TRUE(o.d.counts.empty());
  EXPECT_EQ(o.d.warnings, std::vector<std::string>{
                              "gpuadmit: Pod default/p: tp \"four\" from gpuadmit.io/tp-size is "
                              "not a size from 1 to 1024: ignored"});
  EXPECT_EQ(o.d.trail.front(),
            "container vllm: pp \"x\" from args is not a size from 1 to 1024: ignored");
}

TEST(OptOut, OptimizeFalseLeavesCountAndSharingAlone) {
  for (const char* key : {"gpuadmit.io/optimize", "gpu-autoscaler.io/optimize"}) {
    for (const char* value : {"false", "False"}) {
      Outcome o = Requirements(ServerPod({"--tp", "4"}, {{kGpu, "1"}}, {{key, value}}),
                               WithCountAction(GpuCountAction::kCorrect));
      EXPECT_TRUE(o.state.opted_out) << key;
      EXPECT_TRUE(o.d.counts.empty()) << key;
      EXPECT_EQ(o.state.gpu_memory_mib, 0) << key;
      EXPECT_EQ(o.d.trail, std::vector<std::string>{std::string(key) +
                                                    ": \"false\": GPU count and sharing left "
                                                    "as asked"});
    }
  }
  Outcome on =
      Requirements(ServerPod({"--tp", "4"}, {{kGpu, "1"}}, {{"gpuadmit.io/optimize", "true"}}),
                   WithCountAction(GpuCountAction::kCorrect));
  EXPECT_FALSE(on.state.opted_out);
  EXPECT_EQ(on.d.counts.size(), 1u);
}

TEST(MemoryNeed, FromTheAnnotationTheModelOrUnknown) {
  struct Case {
    json args;
    json annotations;
    int64_t mib;
    std::string trail;
  } cases[] = {
      {{"serve", "llama-3-70b"},
       {{"gpuadmit.io/gpu-memory", "16Gi"}},
       16384,
       "GPU memory need 16384 MiB per GPU (gpuadmit.io/gpu-memory)"},
      {json::array(),
       {{"gpu-autoscaler.io/gpu-memory", "12000"}},
       12000,
       "GPU memory need 12000 MiB per GPU (gpu-autoscaler.io/gpu-memory)"},
      {{"serve", "Llama-2-7b-chat"},
       {{"gpuadmit.io/model", "llama-3-70b"}},
       80000,
       "GPU memory need 80000 MiB per GPU: model llama-3-70b (gpuadmit.io/model) matches \"70b\" "
       "(20000 MiB per GPU over 4 GPUs, on this pod's 1)"},
      {{"serve", "Llama-2-7b-chat"},
       json::object(),
       12000,
       "GPU memory need 12000 MiB per GPU: model Llama-2-7b-chat (args of container vllm) "
       "matches \"7b\""},
      {{"-m", "sglang.launch_server", "--model-path", "Qwen/qwen2.5-72b"},
       json::object(),
       8000,
       "GPU memory need 8000 MiB per GPU: model Qwen/qwen2.5-72b (args of container vllm) "
       "matches no rule: the default"},
      {{"--served-model-name", "mixtral-8x7b"},
       json::object(),
       12000,
       "GPU memory need 12000 MiB per GPU: model mixtral-8x7b (args of container vllm) matches "
       "\"7b\""},
      {{"python", "train.py"}, json::object(), 0, ""},
  };
  for (const Case& c : cases) {
    Outcome o = Requirements(ServerPod(c.args, {{kGpu, "1"}}, c.annotations));
    EXPECT_EQ(o.state.gpu_memory_mib, c.mib) << c.trail;
    EXPECT_EQ(o.d.trail,
              c.trail.empty() ? std::vector<std::string>{} : std::vector<std::string>{c.trail});
    EXPECT_TRUE(o.d.warnings.empty()) << c.trail;
  }
}

TEST(MemoryNeed, AnUnreadableAnnotationIsAWarningAndTheModelDecides) {
  Outcome o = Requirements(
      ServerPod({"serve", "llama-2-13b"}, {{kGpu, "1"}}, {{"gpuadmit.io/gpu-memory", "lots"}}));
  EXPECT_EQ(o.state.gpu_memory_mib, 12000);
  EXPECT_EQ(o.d.warnings,
            std::vector<std::string>{"gpuadmit: Pod default/p: gpuadmit.io/gpu-memory \"lots\" "
                                     "is not a memory quantity: ignored"});
}

TEST(MemoryNeed, APodWithoutGpusAndWithoutAModelSaysNothing) {
  Outcome o = Requirements(ServerPod({"python", "app.py"}, json::object()));
  EXPECT_TRUE(o.d.trail.empty());
  EXPECT_EQ(o.state.gpu_memory_mib, 0);
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(PodInputs, ListsEveryInputInTheOrderInputEntryLooks) {
  json metadata = {{"annotations",
                    {{"gpuadmit.io/tp-size", "2"},
                     {"gpu-autoscaler.io/tp-size", "4"},
                     {"gpu-autoscaler.io/model", "llama-7b"},
                     {"other.io/tp-size", "16"},
                     {"gpuadmit.io", "no key"}}},
                   {"labels", {{"gpuadmit.io/pp-size", "3"}, {"gpuadmit.io/tp-size", "8"}}}};
  json spec = {{"containers", json::array()}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, &metadata, true);
  Policy policy;
  std::vector<std::string> listed;
  for (const auto& [key, entry] : pod.Inputs(policy)) {
    listed.push_back(std::string(key) + " " + std::string(entry->first) + "=" +
                     std::string(entry->second));
  }
  EXPECT_EQ(listed, (std::vector<std::string>{
                        "tp-size gpuadmit.io/tp-size=2", "model gpu-autoscaler.io/model=llama-7b",
                        "tp-size gpu-autoscaler.io/tp-size=4", "pp-size gpuadmit.io/pp-size=3",
                        "tp-size gpuadmit.io/tp-size=8"}));
  // The first listed for a key is what InputEntry finds.
  for (const char* key : {"tp-size", "model", "pp-size"}) {
    for (const auto& [k, entry] : pod.Inputs(policy)) {
      if (k != key) continue;
      EXPECT_EQ(entry, pod.InputEntry(policy, key)) << key;
      break;
    }
  }
  EXPECT_EQ(pod.InputEntry(policy, "dp-size"), nullptr);
}

// InputEntry looks under the policy's prefix; a copy of the request finds entries of its own
// maps.
TEST(PodInputs, InputEntryFollowsThePolicyPrefixAndACopysOwnMaps) {
  json metadata = {{"annotations", {{"gpuadmit.io/model", "a"}, {"acme.io/model", "b"}}}};
  json spec = {{"containers", json::array()}};
  PodRequest pod = PodRequest::From("default", "Pod default/p", spec, &metadata, true);
  Policy ours;
  Policy acme;
  acme.annotation_prefix = "acme.io";
  EXPECT_EQ(pod.Input(ours, "model"), "a");
  EXPECT_EQ(pod.Input(acme, "model"), "b");
  EXPECT_EQ(pod.Input(ours, "model"), "a");
  PodRequest copy = pod;
  const auto* entry = copy.InputEntry(ours, "model");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry, &*copy.annotations.find("gpuadmit.io/model"));  // the copy's node, not pod's
}

}  // namespace
}  // namespace gpuadmit
