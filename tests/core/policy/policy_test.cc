#include "core/policy/policy.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

// "line:column: message" per issue; empty when the policy parsed.
std::vector<std::string> Issues(const std::string& yaml) {
  auto p = ParsePolicy(yaml);
  std::vector<std::string> out;
  if (p.ok()) return out;
  for (const PolicyIssue& i : p.error()) {
    out.push_back(std::to_string(i.line) + ":" + std::to_string(i.column) + ": " + i.message);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "\n  " + l;
  return out;
}

// A good document and the default policy with the changes it should make.
struct GoodCase {
  const char* yaml;
  std::function<void(Policy&)> change;
};

void ExpectParsed(const std::vector<GoodCase>& cases) {
  for (const GoodCase& c : cases) {
    auto parsed = ParsePolicy(c.yaml);
    ASSERT_TRUE(parsed.ok()) << c.yaml << Joined(Issues(c.yaml));
    Policy want;
    c.change(want);
    EXPECT_TRUE(parsed.value() == want) << c.yaml;
  }
}

// A bad document and every issue it should get, in file order.
struct BadCase {
  const char* yaml;
  std::vector<std::string> issues;
};

void ExpectIssues(const std::vector<BadCase>& cases) {
  for (const BadCase& c : cases) EXPECT_EQ(Issues(c.yaml), c.issues) << c.yaml;
}

TEST(ParsePolicy, TheShippedPolicyIsTheDefaultsPlusTheOmeWorkloadTheSimulatedH200AndFirstFit) {
  auto p = ParsePolicy(testing::ReadSourceFile("manifests/examples/policy.yaml"));
  ASSERT_TRUE(p.ok()) << Joined(Issues(testing::ReadSourceFile("manifests/examples/policy.yaml")));
  Policy want;
  want.workloads = {{"ome.io", "InferenceService", {"/spec/engine", "/spec/decoder"}, "runner"}};
  // Seed 003's simulated 70 GB H200, named as demo-cluster.json's nodes label it.
  want.mig.products = {
      {"NVIDIA-H200", {{"1g.10gb", 7}, {"2g.20gb", 3}, {"3g.40gb", 2}, {"7g.70gb", 1}}}};
  // The strategy the replays of docs/decision-quality.md support.
  want.placement.strategy = PlacementStrategy::kFirstFit;
  EXPECT_TRUE(p.value() == want);
}

TEST(ParsePolicy, EveryYamlExampleInTheDocsIsAValidPolicy) {
  const std::string open = "```yaml\n";
  int examples = 0;
  for (const char* page : {"docs/policy.md", "docs/policy-gpu.md", "docs/policy-placement.md"}) {
    const std::string doc = testing::ReadSourceFile(page);
    for (size_t at = doc.find(open); at != std::string::npos; at = doc.find(open, at)) {
      at += open.size();
      size_t end = doc.find("```", at);
      ASSERT_NE(end, std::string::npos) << page;
      std::string example = doc.substr(at, end - at);
      EXPECT_TRUE(ParsePolicy(example).ok()) << page << "\n" << example << Joined(Issues(example));
      ++examples;
    }
  }
  EXPECT_GE(examples, 12);  // one per section and sub-section at least
}

TEST(ParsePolicy, TheDocumentedDefaultsAreTheBuiltInOnes) {
  const std::string doc = testing::ReadSourceFile("docs/policy.md");
  size_t at = doc.find("```yaml\n", doc.find("## The whole file with its defaults"));
  ASSERT_NE(at, std::string::npos);
  at += 8;
  std::string example = doc.substr(at, doc.find("```", at) - at);
  auto p = ParsePolicy(example);
  ASSERT_TRUE(p.ok()) << Joined(Issues(example));
  EXPECT_TRUE(p.value() == Policy{}) << example;
}

TEST(ParsePolicy, AnEmptyDocumentIsTheDefaultPolicy) {
  for (const char* empty : {"", "# only a comment\n", "{}", "---\n"}) {
    auto p = ParsePolicy(empty);
    ASSERT_TRUE(p.ok()) << empty;
    EXPECT_TRUE(p.value() == Policy{}) << empty;
  }
  EXPECT_EQ(Policy{}.Annotation("fallback"), "gpuadmit.io/fallback");
}

TEST(ParsePolicy, AKeyWithNoValueIsTheSameAsNoKey) {
  ExpectParsed({
      {"exemptNamespaces:\nworkloads:\nsharing:\n  rules:\n", [](Policy&) {}},
      {"mig: ~\nplacement: null\n", [](Policy&) {}},
  });
}

TEST(ParsePolicy, ReadsTheTopLevelKnobs) {
  ExpectParsed({
      {"annotationPrefix: gpu.example.com",
       [](Policy& p) { p.annotation_prefix = "gpu.example.com"; }},
      {"failureMode: closed", [](Policy& p) { p.failure_mode = FailureMode::kClosed; }},
      {"exemptNamespaces: [a, b-2]",
       [](Policy& p) {
         p.exempt_namespaces = {"a", "b-2"};
       }},
      {"exemptNamespaces: []", [](Policy& p) { p.exempt_namespaces.clear(); }},
  });
}

TEST(ParsePolicy, ReadsCustomWorkloadsWithTheirPodSpecPointers) {
  ExpectParsed({
      {R"(
workloads:
  - group: ome.io
    kind: InferenceService
    podSpecs: [/spec/engine, /spec/decoder]
    gpuContainer: runner
  - group: ""
    kind: Thing
    podSpecs: [/spec/a~1b]
    metadata: /spec/meta
)",
       [](Policy& p) {
         p.workloads = {{"ome.io", "InferenceService", {"/spec/engine", "/spec/decoder"}, "runner"},
                        {"", "Thing", {"/spec/a~1b"}, "", "/spec/meta"}};
       }},
  });
}

TEST(ParsePolicy, ReadsTheMigSection) {
  ExpectParsed({
      {R"(
mig:
  fallback: false
  onExhausted: deny
  products:
    - product: NVIDIA-H200
      profiles: {1g.10gb: 7, 2g.20gb: 3, 3g.40gb: 2, 7g.70gb: 1, 1g.10gb+me: 1}
  chains:
    - from: 3g.40gb
      to: [2g.20gb, 1g.10gb]
)",
       [](Policy& p) {
         p.mig.fallback = false;
         p.mig.on_exhausted = ExhaustedAction::kDeny;
         p.mig.products = {
             {"NVIDIA-H200",
              {{"1g.10gb", 7}, {"2g.20gb", 3}, {"3g.40gb", 2}, {"7g.70gb", 1}, {"1g.10gb+me", 1}}}};
         p.mig.chains = {{"3g.40gb", {"2g.20gb", "1g.10gb"}}};
       }},
  });
}

TEST(ParsePolicy, ReadsTheSharingSectionAndSortsRulesByPriorityKeepingFileOrderOnTies) {
  ExpectParsed({
      {R"(
sharing:
  enabled: false
  defaultFlow: false
  migBelow: 10Gi
  modes: {mig: false, mps: true, timeSlicing: false}
  rules:
    - name: low
      mode: time-slicing
    - name: inference-mps
      priority: 10
      match:
        namespaces: [ml]
        podLabels: {team: search, app.kubernetes.io/name: "true"}
        workloadTypes: [inference, serving]
        gpus: {min: 1, max: 1}
        gpuMemory: {min: 0, max: 20Gi}
      mode: mps
    - name: small-mig
      priority: 10
      match: {gpuMemory: {max: 12000}}
      mode: mig
      migProfile: 1g.10gb
    - name: first
      priority: -1
      mode: exclusive
)",
       [](Policy& p) {
         p.sharing.enabled = false;
         p.sharing.default_flow = false;
         p.sharing.mig_below_mib = 10240;
         p.sharing.enable_mig = false;
         p.sharing.enable_time_slicing = false;
         SharingRule mps{"inference-mps", 10, {}, SharingMode::kMps, ""};
         mps.match.namespaces = {"ml"};
         mps.match.pod_labels = {{"team", "search"}, {"app.kubernetes.io/name", "true"}};
         mps.match.workload_types = {"inference", "serving"};
         mps.match.min_gpus = 1;
         mps.match.max_gpus = 1;
         mps.match.min_memory_mib = 0;
         mps.match.max_memory_mib = 20480;
         SharingRule mig{"small-mig", 10, {}, SharingMode::kMig, "1g.10gb"};
         mig.match.max_memory_mib = 12000;
         p.sharing.rules = {mps,
                            mig,
                            {"low", 0, {}, SharingMode::kTimeSlicing, ""},
                            {"first", -1, {}, SharingMode::kExclusive, ""}};
       }},
      {"sharing: {optIn: true, mps: {activeThreadPercentage: 100, memoryLimit: 2048}}",
       [](Policy& p) {
         p.sharing.opt_in = true;
         p.sharing.mps_active_thread_percentage = 100;
         p.sharing.mps_memory_limit_mib = 2048;
       }},
      {"sharing: {mps: {memoryLimit: 2Gi, maxClients: 16}}",
       [](Policy& p) {
         p.sharing.mps_memory_limit_mib = 2048;
         p.sharing.mps_max_clients = 16;
       }},
  });
}

TEST(ParsePolicy, MemoryIsAQuantityOfBytesOrABareNumberOfMiBRoundedUp) {
  struct Case {
    const char* text;
    int64_t mib;
  } cases[] = {{"20Gi", 20480},  {"20000Mi", 20000}, {"20G", 19074},  {"20GB", 19074},
               {"20000", 20000}, {"0", 0},           {"1.5Gi", 1536}, {"\"16Gi\"", 16384}};
  for (const Case& c : cases) {
    auto p = ParsePolicy(std::string("sharing: {migBelow: ") + c.text + "}");
    ASSERT_TRUE(p.ok()) << c.text
                        << Joined(Issues(std::string("sharing: {migBelow: ") + c.text + "}"));
    EXPECT_EQ(p.value().sharing.mig_below_mib, c.mib) << c.text;
  }
}

TEST(ParsePolicy, ReadsTheRequirementsSectionWhoseModelListReplacesTheDefaults) {
  ExpectParsed({
      {R"(
requirements:
  gpuCount: correct
  modelMemory:
    - contains: 70b
      memory: 40Gi
    - contains: mixtral
      memory: 30000
  defaultModelMemory: 4000Mi
)",
       [](Policy& p) {
         p.requirements.gpu_count = GpuCountAction::kCorrect;
         p.requirements.model_memory = {{"70b", 40960}, {"mixtral", 30000}};
         p.requirements.default_model_memory_mib = 4000;
       }},
      {"requirements: {gpuCount: off, modelMemory: []}",
       [](Policy& p) {
         p.requirements.gpu_count = GpuCountAction::kOff;
         p.requirements.model_memory.clear();
       }},
      {"requirements: {gpuCount: fill}",
       [](Policy& p) { p.requirements.gpu_count = GpuCountAction::kFill; }},
  });
}

TEST(ParsePolicy, ReadsThePlacementSection) {
  ExpectParsed({
      {R"(
placement:
  enabled: false
  strategy: score
  affinity: required
  podsWithoutGpus: true
  preferredWeight: 50
  idle: {maxUtilization: 20.5, maxMemory: 40}
  score: {memoryWeight: 1, idleWeight: 0}
  gpuTypes:
    - product: A100
      weight: 100
    - product: V100
)",
       [](Policy& p) {
         p.placement.enabled = false;
         p.placement.strategy = PlacementStrategy::kScore;
         p.placement.affinity = AffinityMode::kRequired;
         p.placement.pods_without_gpus = true;
         p.placement.preferred_weight = 50;
         p.placement.idle_max_utilization_percent = 20.5;
         p.placement.idle_max_memory_percent = 40;
         p.placement.score_memory_weight = 1;
         p.placement.score_idle_weight = 0;
         p.placement.gpu_types = {{"A100", 100}, {"V100", 1}};
       }},
      {"placement: {filter: {minFreeMemory: 8000, maxUtilization: 50}}",
       [](Policy& p) {
         p.placement.filter_min_free_memory_mib = 8000;
         p.placement.filter_max_utilization_percent = 50;
       }},
      {"placement: {filter: {minFreeMemory: 8Gi}}",
       [](Policy& p) { p.placement.filter_min_free_memory_mib = 8192; }},
      {"placement: {strategy: best-fit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kBestFit; }},
      {"placement: {strategy: first-fit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kFirstFit; }},
      {"placement: {strategy: worst-fit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kWorstFit; }},
      // gpu-autoscaler's spellings of the three.
      {"placement: {strategy: bestfit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kBestFit; }},
      {"placement: {strategy: firstfit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kFirstFit; }},
      {"placement: {strategy: worstfit}",
       [](Policy& p) { p.placement.strategy = PlacementStrategy::kWorstFit; }},
  });
}

TEST(ParsePolicy, ReadsTheWorkerDefaults) {
  ExpectParsed({
      {R"(
workerDefaults:
  tolerations:
    - {key: nvidia.com/gpu, operator: Equal, value: "true", effect: NoSchedule}
    - {operator: Exists}
    - {key: dedicated, operator: Exists, effect: NoExecute}
  shmSize: 2Gi
)",
       [](Policy& p) {
         p.worker_defaults.tolerations = {{"nvidia.com/gpu", "Equal", "true", "NoSchedule"},
                                          {"", "Exists", "", ""},
                                          {"dedicated", "Exists", "", "NoExecute"}};
         p.worker_defaults.shm_size = "2Gi";
       }},
      {R"(
workerDefaults:
  resources:
    - gpuType: V100
      requests: {cpu: 4000m, memory: 8Gi}
      limits: {cpu: "8", memory: 16Gi}
)",
       [](Policy& p) {
         constexpr int64_t kGiMilli = (int64_t{1} << 30) * 1000;
         p.worker_defaults.resources = {{"V100",
                                         {{"requests", "cpu", "4000m", 4'000},
                                          {"requests", "memory", "8Gi", 8 * kGiMilli},
                                          {"limits", "cpu", "8", 8'000},
                                          {"limits", "memory", "16Gi", 16 * kGiMilli}}}};
       }},
  });
}

TEST(ParsePolicy, ReportsBadTopLevelValues) {
  ExpectIssues({
      {"annotationPrefix: \"Not_A_Domain\"",
       {"1:19: annotationPrefix \"Not_A_Domain\" is not a DNS subdomain"}},
      {"failureMode: sometimes",
       {"1:14: failureMode must be one of open, closed, not \"sometimes\""}},
      {"exemptNamespaces: kube-system",
       {"1:19: exemptNamespaces must be a list, not \"kube-system\""}},
      {"exemptNamespaces: [ok, Not_OK, [x]]",
       {"1:24: exemptNamespaces[1] must be a namespace name, not \"Not_OK\"",
        "1:32: exemptNamespaces[2] must be a string, not a list"}},
      {"colour: blue\nannotationprefix: x.io\nmigFallback: {enabled: false}",
       {"1:1: unknown key \"colour\" in the policy",
        "2:1: unknown key \"annotationprefix\" in the policy (did you mean \"annotationPrefix\"?)",
        "3:14: migFallback is now mig.fallback and mig.onExhausted (see docs/policy.md)"}},
      {"failureMode: open\nfailureMode: closed",
       {"2:1: key \"failureMode\" appears twice in the policy"}},
  });
}

TEST(ParsePolicy, ReportsBadWorkloads) {
  ExpectIssues({
      {"workloads: {group: ome.io}", {"1:12: workloads must be a list, not a map"}},
      {"workloads:\n  - kind: InferenceService\n",
       {"2:5: workloads[0].group is required", "2:5: workloads[0].podSpecs is required"}},
      {"workloads:\n  - {group: Ome_io, kind: inference-service, podSpecs: [spec/engine]}\n",
       {"2:13: workloads[0].group must be an API group such as ome.io, not \"Ome_io\"",
        "2:27: workloads[0].kind must be a kind such as InferenceService, not "
        "\"inference-service\"",
        "2:57: workloads[0].podSpecs[0] must be a JSON pointer such as /spec/engine, not "
        "\"spec/engine\""}},
      {"workloads:\n  - {group: a.io, kind: A, podSpecs: [], gpuContainer: x/y, metadata: /m~2}\n",
       {"2:38: workloads[0].podSpecs must not be empty",
        "2:56: workloads[0].gpuContainer must be a field name of the pod spec such as runner, not "
        "\"x/y\"",
        "2:71: workloads[0].metadata must be a JSON pointer such as /spec/engine, not \"/m~2\""}},
      {R"(workloads:
  - {group: ome.io, kind: InferenceService, podSpecs: [/spec/engine]}
  - {group: ome.io, kind: InferenceService, podSpecs: [/spec/decoder]}
  - {group: apps, kind: Deployment, podSpecs: [/spec/template/spec]}
)",
       {"3:5: workloads[1] declares ome.io/InferenceService again (see workloads[0])",
        "4:5: workloads[2]: apps/Deployment is built in and needs no entry"}},
  });
}

TEST(ParsePolicy, ReportsBadMigSettings) {
  ExpectIssues({
      {"mig: {fallback: yes, onExhausted: fail}",
       {"1:17: mig.fallback must be true or false, not \"yes\"",
        "1:35: mig.onExhausted must be one of warn, deny, not \"fail\""}},
      {"mig: {fallback: \"true\"}",
       {"1:17: mig.fallback must be true or false, not the quoted string \"true\""}},
      {R"(mig:
  products:
    - product: X
      profiles: {2g20gb: 3, 1g.10gb: 8, 2g.20gb: many}
    - product: X
      profiles: {}
    - profiles: {1g.10gb: 7}
)",
       {"4:18: mig.products[0].profiles key \"2g20gb\" must be a MIG profile such as 1g.10gb or "
        "3g.40gb",
        "4:38: mig.products[0].profiles.1g.10gb must be between 1 and 7, not 8",
        "4:50: mig.products[0].profiles.2g.20gb must be a whole number, not \"many\"",
        "5:7: mig.products[1].product \"X\" is already described by mig.products[0]",
        "6:17: mig.products[1].profiles must not be empty",
        "7:7: mig.products[2].product is required"}},
      {R"(mig:
  chains:
    - from: 3g.40gb
      to: [2g.20gb, 4g.40gb, 2g.20gb, big]
    - from: 3g.40gb
      to: []
    - to: [1g.10gb]
)",
       {"4:21: mig.chains[0].to[1] \"4g.40gb\" is not smaller than \"3g.40gb\": a fallback only "
        "goes to smaller profiles",
        "4:30: mig.chains[0].to[2] \"2g.20gb\" appears twice in mig.chains[0].to",
        "4:39: mig.chains[0].to[3] must be a MIG profile such as 1g.10gb or 3g.40gb, not \"big\"",
        "5:7: mig.chains[1].from \"3g.40gb\" already has a chain: mig.chains[0]",
        "6:11: mig.chains[1].to must not be empty", "7:7: mig.chains[2].from is required"}},
  });
}

TEST(ParsePolicy, ReportsBadSharingSettings) {
  ExpectIssues({
      {"sharing: {enabled: 1, migBelow: 20Q, modes: {mig: true, mpss: true}}",
       {"1:20: sharing.enabled must be true or false, not \"1\"",
        "1:33: sharing.migBelow must be a memory size such as 20Gi, 20000Mi or 20000 (MiB), not "
        "\"20Q\"",
        "1:57: unknown key \"mpss\" in sharing.modes (did you mean \"mps\"?)"}},
      {"sharing: {mps: {maxClients: 49}}",
       {"1:29: sharing.mps.maxClients must be between 1 and 48, not 49"}},
      {"sharing: {optIn: yes-please, mps: {activeThreadPercentage: 0, memoryLimit: big}}",
       {"1:18: sharing.optIn must be true or false, not \"yes-please\"",
        "1:60: sharing.mps.activeThreadPercentage must be between 1 and 100, not 0",
        "1:76: sharing.mps.memoryLimit must be a memory size such as 20Gi, 20000Mi or 20000 "
        "(MiB), not \"big\""}},
      {R"(sharing:
  rules:
    - name: a
      mode: mps
      migProfile: 1g.10gb
    - name: a
      mode: shared
    - priority: high
      match:
        namespaces: [Bad_NS]
        podLabels: {"bad key!": x, team: "no spaces"}
        workloadTypes: [inference, gaming]
        gpus: {min: 2, max: 1}
        gpuMemory: {min: 30Gi, max: 20Gi}
        nodes: [a]
)",
       {"5:19: sharing.rules[0].migProfile is only for mode mig",
        "6:7: sharing.rules[1].name \"a\" is already used by sharing.rules[0]",
        "7:13: sharing.rules[1].mode must be one of exclusive, mig, mps, time-slicing, not "
        "\"shared\"",
        "8:7: sharing.rules[2].name is required", "8:7: sharing.rules[2].mode is required",
        "8:17: sharing.rules[2].priority must be a whole number, not \"high\"",
        "10:22: sharing.rules[2].match.namespaces[0] must be a namespace name, not \"Bad_NS\"",
        "11:21: sharing.rules[2].match.podLabels key \"bad key!\" must be a label key such as "
        "team",
        "11:42: sharing.rules[2].match.podLabels.team must be a label value, not \"no spaces\"",
        "12:36: sharing.rules[2].match.workloadTypes[1] must be one of training, inference, "
        "serving, development, batch, not \"gaming\"",
        "13:15: sharing.rules[2].match.gpus.min must not be more than its max",
        "14:20: sharing.rules[2].match.gpuMemory.min must not be more than its max",
        "15:9: unknown key \"nodes\" in sharing.rules[2].match"}},
      {"sharing: {rules: [{name: x, mode: mig, migProfile: 2g}]}",
       {"1:52: sharing.rules[0].migProfile must be a MIG profile such as 1g.10gb or 3g.40gb, not "
        "\"2g\""}},
  });
}

TEST(ParsePolicy, ReadsTheWorkloadDetectionSectionNormalisingPatterns) {
  ExpectParsed({
      {"workloadDetection: {enabled: false}",
       [](Policy& p) { p.workload_detection.enabled = false; }},
      {R"(workloadDetection:
  patterns:
    - {type: serving, image: Registry.Example.com/Serving/}
    - type: training
      command: "  mpirun   ...  python* "
    - {type: unknown, image: jupyter-batch, command: papermill}
)",
       [](Policy& p) {
         p.workload_detection.patterns = {{"serving", "registry.example.com/serving/", ""},
                                          {"training", "", "mpirun ... python*"},
                                          {"unknown", "jupyter-batch", "papermill"}};
       }},
  });
}

TEST(ParsePolicy, ReportsBadWorkloadDetectionSettings) {
  ExpectIssues({
      {R"(workloadDetection:
  enabled: yes please
  patterns:
    - {type: gaming, image: x}
    - {image: vllm}
    - {type: inference}
    - {type: training, command: "py*thon train.py"}
    - {type: training, command: "... ..."}
    - {type: inference, image: "", regex: "vllm.*"}
)",
       {"2:12: workloadDetection.enabled must be true or false, not \"yes please\"",
        "4:14: workloadDetection.patterns[0].type must be one of training, inference, serving, "
        "development, batch, unknown, not \"gaming\"",
        "5:7: workloadDetection.patterns[1].type is required",
        "6:7: workloadDetection.patterns[2] needs an image, a command or both",
        "7:33: workloadDetection.patterns[3].command word \"py*thon\": * may only end a word (a "
        "prefix, as in python*)",
        "8:33: workloadDetection.patterns[4].command needs a word besides \"...\"",
        "9:32: workloadDetection.patterns[5].image must not be empty",
        "9:36: unknown key \"regex\" in workloadDetection.patterns[5]"}},
      {"workloadDetection: {patterns: [{type: training, command: a b c d e f g h i j k l m n o p "
       "q}]}",
       {"1:58: workloadDetection.patterns[0].command has 17 words; at most 16 are allowed"}},
  });
}

TEST(ParsePolicy, ReportsBadRequirementsSettings) {
  ExpectIssues({
      {"requirements: {gpuCount: always, defaultModelMemory: -1Gi}",
       {"1:26: requirements.gpuCount must be one of off, warn, fill, correct, not \"always\"",
        "1:54: requirements.defaultModelMemory must be a memory size such as 20Gi, 20000Mi or "
        "20000 (MiB), not \"-1Gi\""}},
      {R"(requirements:
  modelMemory:
    - contains: 70b
      memory: 20000
    - contains: 70B
      memory: 1Gi
    - memory: 1
    - {contains: "", memory: lots}
)",
       {"5:7: requirements.modelMemory[1].contains \"70B\" repeats requirements.modelMemory[0]; "
        "the first match wins, so this one never applies",
        "7:7: requirements.modelMemory[2].contains is required",
        "8:18: requirements.modelMemory[3].contains must not be empty",
        "8:30: requirements.modelMemory[3].memory must be a memory size such as 20Gi, 20000Mi or "
        "20000 (MiB), not \"lots\""}},
  });
}

TEST(ParsePolicy, ReportsBadPlacementSettings) {
  ExpectIssues({
      {R"(placement:
  strategy: fastest
  affinity: maybe
  preferredWeight: 0
  idle: {maxUtilization: 101, maxMemory: half}
  score: {memoryWeight: 0, idleWeight: 0}
  gpuTypes:
    - {product: A100, weight: 1000}
    - {weight: 5}
)",
       {"2:13: placement.strategy must be one of most-idle, best-fit, first-fit, worst-fit, "
        "score, fragmentation, bestfit, firstfit, worstfit, not \"fastest\"",
        "3:13: placement.affinity must be one of preferred, required, not \"maybe\"",
        "4:20: placement.preferredWeight must be between 1 and 100, not 0",
        "5:26: placement.idle.maxUtilization must be between 0 and 100, not 101",
        "5:42: placement.idle.maxMemory must be a number, not \"half\"",
        "6:10: placement.score: memoryWeight and idleWeight must not both be 0",
        "8:31: placement.gpuTypes[0].weight must be between 1 and 100, not 1000",
        "9:7: placement.gpuTypes[1].product is required"}},
      {"placement: {score: {memoryWeight: -0.5}}",
       {"1:35: placement.score.memoryWeight must be at least 0, not -0.5"}},
      {"placement: {filter: {minFreeMemory: lots, maxUtilization: 150, minMemory: 1}}",
       {"1:37: placement.filter.minFreeMemory must be a memory size such as 20Gi, 20000Mi or "
        "20000 (MiB), not \"lots\"",
        "1:59: placement.filter.maxUtilization must be between 0 and 100, not 150",
        "1:64: unknown key \"minMemory\" in placement.filter"}},
  });
}

TEST(ParsePolicy, ReadsTheDraSectionAndReportsBadValues) {
  auto p = ParsePolicy("dra: {firstAvailable: false, alignPcieRoot: true, steerClaims: false}");
  ASSERT_TRUE(p.ok());
  DraPolicy want;
  want.first_available = false;
  want.align_pcie_root = true;
  want.steer_claims = false;
  EXPECT_TRUE(p.value().dra == want);
  ExpectIssues({{"dra: {steerClaims: sometimes, pinGpus: true}",
                 {"1:20: dra.steerClaims must be true or false, not \"sometimes\"",
                  "1:31: unknown key \"pinGpus\" in dra"}}});
}

TEST(ParsePolicy, ReportsBadWorkerDefaults) {
  ExpectIssues({
      {R"(workerDefaults:
  tolerations:
    - {key: nvidia.com/gpu, operator: In, effect: NoScheduleAtAll}
    - {key: a, operator: Exists, value: x}
    - {value: x}
    - {key: "bad key", tolerationSeconds: 5}
  shmSize: 2048
)",
       {"3:39: workerDefaults.tolerations[0].operator must be one of Equal, Exists, not \"In\"",
        "3:51: workerDefaults.tolerations[0].effect must be one of NoSchedule, PreferNoSchedule, "
        "NoExecute, not \"NoScheduleAtAll\"",
        "4:7: workerDefaults.tolerations[1].value must be empty when operator is Exists",
        "5:7: workerDefaults.tolerations[2].key is required unless operator is Exists",
        "6:13: workerDefaults.tolerations[3].key must be a label key such as nvidia.com/gpu, not "
        "\"bad key\"",
        "6:24: unknown key \"tolerationSeconds\" in workerDefaults.tolerations[3]",
        "7:12: workerDefaults.shmSize must be a positive size with a unit such as 2Gi or 512Mi, "
        "not \"2048\""}},
      {R"(workerDefaults:
  resources:
    - {requests: {cpu: lots, gpu: 1}}
    - {gpuType: A100, requests: {memory: 32Gi}, limits: {memory: 16Gi}}
)",
       {"3:7: workerDefaults.resources[0].gpuType is required",
        "3:24: workerDefaults.resources[0].requests.cpu must be a positive quantity such as 4000m, "
        "8 or 16Gi, not \"lots\"",
        "3:30: unknown key \"gpu\" in workerDefaults.resources[0].requests (did you mean "
        "\"cpu\"?)",
        "4:7: workerDefaults.resources[1]: requests.memory 32Gi is above limits.memory 16Gi"}},
      {"workerDefaults: {shmSize: 0Gi}",
       {"1:27: workerDefaults.shmSize must be a positive size with a unit such as 2Gi or 512Mi, "
        "not \"0Gi\""}},
  });
}

TEST(ParsePolicy, ReportsEveryProblemOfADocumentInFileOrder) {
  EXPECT_EQ(Issues(R"(annotationPrefix: "Not_A_Domain"
failureMode: sometimes
mig:
  fallback: maybe
  extra: 1
colour: blue
)"),
            (std::vector<std::string>{
                "1:19: annotationPrefix \"Not_A_Domain\" is not a DNS subdomain",
                "2:14: failureMode must be one of open, closed, not \"sometimes\"",
                "4:13: mig.fallback must be true or false, not \"maybe\"",
                "5:3: unknown key \"extra\" in mig",
                "6:1: unknown key \"colour\" in the policy",
            }));
}

TEST(ParsePolicy, SyntaxErrorsAndWrongShapesAreIssuesNotExceptions) {
  EXPECT_EQ(Issues("a: [1, 2\nb: c").size(), 1u);
  EXPECT_EQ(Issues("- 1\n- 2"), std::vector<std::string>{"1:1: the policy must be a YAML map"});
  EXPECT_EQ(Issues("sharing: [enabled]"),
            std::vector<std::string>{"1:10: sharing must be a map, not a list"});
  EXPECT_EQ(Issues("? [a]\n: b"),
            std::vector<std::string>{"1:3: a key in the policy must be a plain name, not a list"});
}

}  // namespace
}  // namespace gpuadmit
