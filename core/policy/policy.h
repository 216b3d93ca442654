// The policy: what gpuadmit may change and how. One YAML document (docs/policy.md); parsed
// whole, validated strictly, then shared read-only (std::shared_ptr<const Policy>).
//
//   auto parsed = ParsePolicy(text);
//   if (!parsed.ok()) for (const PolicyIssue& i : parsed.error()) print(i.line, i.column,
//   i.message);
//
// Every field's default is the built-in behaviour: an empty document is a complete policy.
//
// Thread safety: pure functions; a Policy is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kube/scheduling.h"
#include "core/kube/workload.h"
#include "core/policy/failure_mode.h"
#include "core/result.h"

namespace gpuadmit {

enum class ExhaustedAction { kWarn, kDeny };

// One MIG profile of a GPU product: its name ("2g.20gb") and how many fit on one GPU.
struct MigCatalogProfile {
  std::string name;
  int per_gpu = 0;
  bool operator==(const MigCatalogProfile&) const = default;
};

// A GPU product's MIG profiles. `product` is matched against the node's nvidia.com/gpu.product
// label (see core/plan/mig_catalog.h for how).
struct MigProductSpec {
  std::string product;
  std::vector<MigCatalogProfile> profiles;
  bool operator==(const MigProductSpec&) const = default;
};

// An explicit fallback chain: a pod asking for `from` tries each of `to`, in order.
struct MigChain {
  std::string from;             // "3g.40gb"
  std::vector<std::string> to;  // {"2g.20gb", "1g.10gb"}
  bool operator==(const MigChain&) const = default;
};

struct MigPolicy {
  bool fallback = true;
  ExhaustedAction on_exhausted = ExhaustedAction::kWarn;
  std::vector<MigProductSpec> products;  // added to the built-in catalog; same name replaces
  std::vector<MigChain> chains;          // override the default chain for their `from`
  bool operator==(const MigPolicy&) const = default;
};

enum class SharingMode { kExclusive, kMig, kMps, kTimeSlicing };

// Selects pods for a sharing rule. Every set field must match; unset fields match anything.
struct SharingSelector {
  std::vector<std::string> namespaces;                         // any of
  std::map<std::string, std::string, std::less<>> pod_labels;  // all of
  std::vector<std::string> workload_types;                     // any of ("inference", ...)
  std::optional<int64_t> min_gpus;                             // GPU count, inclusive
  std::optional<int64_t> max_gpus;
  std::optional<int64_t> min_memory_mib;  // GPU memory need per GPU, inclusive
  std::optional<int64_t> max_memory_mib;
  bool operator==(const SharingSelector&) const = default;
};

struct SharingRule {
  std::string name;
  int priority = 0;  // higher first; ties keep file order
  SharingSelector match;
  SharingMode mode = SharingMode::kExclusive;
  std::string mig_profile;  // kMig only: this profile instead of the smallest that fits
  bool operator==(const SharingRule&) const = default;
};

struct SharingPolicy {
  bool enabled = true;
  std::vector<SharingRule> rules;  // sorted by priority (highest first) when parsed
  // The default flow for pods no rule matches: training -> exclusive; one GPU needing less than
  // mig_below_mib -> MIG; inference/serving -> MPS; development/batch -> time-slicing.
  bool default_flow = true;
  int64_t mig_below_mib = 20 * 1024;  // 20 GiB: a pod needing less is a MIG candidate
  bool enable_mig = true;
  bool enable_mps = true;
  bool enable_time_slicing = true;
  // Share only the pods annotated <prefix>/sharing: enabled; the others stay exclusive.
  bool opt_in = false;
  // The CUDA MPS client settings an MPS pod's GPU containers get (unset: not written).
  std::optional<int> mps_active_thread_percentage;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 1..100
  std::optional<int64_t> mps_memory_limit_mib;      // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
  // At most this many MPS pods per GPU of an MPS node, below the device plugin's replicas.
  std::optional<int> mps_max_clients;
  bool operator==(const SharingPolicy&) const = default;
};

// The most words a workload pattern's command may have (`...` included). 16: the longest
// built-in pattern has 3; a launcher is told apart in far fewer, and a bound lets matching split
// a pattern without allocating.
inline constexpr size_t kMaxCommandPatternWords = 16;

// A pattern naming the workload type of the pods whose GPU containers it matches
// (core/plan/workload_type.h reads it). Every field set must match one container.
struct WorkloadPattern {
  std::string type;     // training, inference, serving, development, batch; "unknown" stops
  std::string image;    // lower-case substring of the image reference; "" for any
  std::string command;  // words in order, single-spaced ("mpirun ... python*"); "" for any
  bool operator==(const WorkloadPattern&) const = default;
};

// Workload type detection: a pod whose labels and annotations name no workload type
// gets the one its GPU containers' images and command lines say, if any does.
struct WorkloadDetectionPolicy {
  bool enabled = true;
  std::vector<WorkloadPattern> patterns;  // tried in file order, before the built-in table
  bool operator==(const WorkloadDetectionPolicy&) const = default;
};

enum class GpuCountAction { kOff, kWarn, kFill, kCorrect };

// A model-name pattern and the GPU memory a model matching it needs per GPU.
struct ModelMemoryRule {
  std::string contains;  // case-insensitive substring of the model name, e.g. "70b"
  int64_t memory_mib = 0;
  // The GPUs memory_mib is per GPU of: the model needs memory_mib x split_over in all, so a pod
  // with fewer GPUs needs more on each. 0: memory_mib on each GPU, whatever the pod's count.
  int64_t split_over = 0;
  bool operator==(const ModelMemoryRule&) const = default;
};

struct RequirementsPolicy {
  // What to do when the parallelism (tp x pp x max(dp, cp, dcp)) disagrees with nvidia.com/gpu:
  // warn only, fill in a missing count, or also correct a wrong one (fill + correct).
  GpuCountAction gpu_count = GpuCountAction::kWarn;
  // By default 70B/65B -> 20,000 MB per GPU over 4 GPUs (a 70B model served 4-way tensor-parallel),
  // 13B/7B -> 12,000 MB; first match wins.
  std::vector<ModelMemoryRule> model_memory = {
      {"70b", 20000, 4}, {"65b", 20000, 4}, {"13b", 12000}, {"7b", 12000}};
  int64_t default_model_memory_mib = 8000;  // a model name matching no rule
  bool operator==(const RequirementsPolicy&) const = default;
};

enum class PlacementStrategy { kMostIdle, kBestFit, kFirstFit, kWorstFit, kScore, kFragmentation };
enum class AffinityMode { kPreferred, kRequired };

// A preference for nodes whose nvidia.com/gpu.product contains `product`.
struct GpuTypePreference {
  std::string product;  // case-insensitive substring: "A100"
  int weight = 1;       // 1..100, a preferred scheduling term's weight
  bool operator==(const GpuTypePreference&) const = default;
};

struct PlacementPolicy {
  bool enabled = true;
  PlacementStrategy strategy = PlacementStrategy::kMostIdle;
  AffinityMode affinity = AffinityMode::kPreferred;
  int preferred_weight = 100;  // weight of the kubernetes.io/hostname preference
  // Steer pods that ask for no GPU too, to the node where their cpu and memory strand the least
  // of the GPUs the workload mix could use (a node without GPUs that can take one leaves it to
  // the scheduler). Only pods the webhook is sent: the manifests' matchConditions send GPU pods.
  bool pods_without_gpus = false;
  // An idle GPU: utilisation below this and memory used below that.
  double idle_max_utilization_percent = 30;
  double idle_max_memory_percent = 50;
  // The score of a GPU: memory_weight x free-memory ratio + idle_weight x (100 - utilisation)
  // / 100; a node's is the mean of its best GPUs for the ask.
  double score_memory_weight = 0.6;
  double score_idle_weight = 0.4;
  // The node filter: a node takes a pod only with as many GPUs as it asks whose latest metrics
  // show at least this much framebuffer free and at most this utilisation (unset: no filter).
  std::optional<int64_t> filter_min_free_memory_mib;
  std::optional<double> filter_max_utilization_percent;
  std::vector<GpuTypePreference> gpu_types;
  bool operator==(const PlacementPolicy&) const = default;
};

// A cpu or memory quantity the GPU containers of a pod of some GPU type get where they set none.
struct ResourceDefault {
  std::string section;   // "requests" or "limits"
  std::string resource;  // "cpu" or "memory"
  std::string quantity;  // as the policy wrote it: "4000m", "8Gi"
  int64_t milli = 0;     // its value in thousandths
  bool operator==(const ResourceDefault&) const = default;
};

// The cpu and memory of the pods that ask for one GPU type by their nodeSelector.
struct GpuTypeResources {
  std::string gpu_type;  // case-insensitive substring of the nodeSelector's value: "V100"
  std::vector<ResourceDefault> defaults;
  bool operator==(const GpuTypeResources&) const = default;
};

// What every GPU pod (and template) gets, whatever else is decided.
struct WorkerDefaults {
  std::vector<Toleration> tolerations;  // added when missing, e.g. nvidia.com/gpu=true:NoSchedule
  std::string shm_size;                 // "2Gi": an in-memory /dev/shm; "" for none
  std::vector<GpuTypeResources> resources;  // the first whose type matches applies
  bool operator==(const WorkerDefaults&) const = default;
};

// Job hygiene for GPU Jobs (a batch Job, or a CronJob's jobTemplate) at CREATE: each field set
// only where the Job's spec has none, so a stuck or finished Job does not hold GPUs or linger.
// Unset fields are not written.
struct JobDefaults {
  std::optional<int64_t> ttl_seconds_after_finished;  // spec.ttlSecondsAfterFinished
  std::optional<int64_t> active_deadline_seconds;     // spec.activeDeadlineSeconds
  std::optional<int64_t> backoff_limit;               // spec.backoffLimit
  bool operator==(const JobDefaults&) const = default;
};

// 300 s (`timeout: 5m`): long enough for a training job's pods to end and free a node,
// short enough that a pod the queue cannot serve still reaches the scheduler the same shift.
inline constexpr int64_t kDefaultQueueTimeoutSeconds = 300;

// Waiting for GPUs: a GPU pod that fits on no node it may use is held gated and released by the
// capacity queue (core/inventory/capacity_queue.h) as capacity frees, or after `timeout_seconds`
// anyway. `serve` acts on it where it has the Kubernetes API on Kubernetes 1.30+ (the leader
// lifts the gates, webhook/queue/), and refuses a policy that enables it elsewhere
// (webhook/queue/queue_support.h); `gpuadmit simulate` plays it in simulated time.
struct QueuePolicy {
  bool enabled = false;
  int64_t timeout_seconds = kDefaultQueueTimeoutSeconds;
  std::vector<std::string> namespaces;  // the namespaces queued; empty: every one not exempt
  // True when pods of `ns` wait in the queue (enabled, and `ns` listed or the list empty).
  bool Queues(std::string_view ns) const;
  bool operator==(const QueuePolicy&) const = default;
};

// How claims for DRA devices (resource.k8s.io ResourceClaims and ResourceClaimTemplates) are
// written (docs/dra.md).
struct DraPolicy {
  // A claim for a MIG profile gets its fallbacks as a prioritized list (`firstAvailable`), for the
  // scheduler's allocator to walk. false: the profile is chosen at admission, as for a pod's
  // extended resources, for quota engines that accept no firstAvailable (Kueue, KAI).
  bool first_available = true;
  // A claim for more than one whole GPU gets a matchAttribute constraint on
  // resource.kubernetes.io/pcieRoot, where some node has that many GPUs under one root.
  bool align_pcie_root = false;
  // A claim made for one pod, on GPUs cut into MIG devices as claims come (dynamic MIG), is
  // pinned to the GPU where the allocator's first fit strands the least (with firstAvailable
  // and placement on; core/admission/claim_steering.h).
  bool steer_claims = true;
  bool operator==(const DraPolicy&) const = default;
};

struct Policy {
  std::string annotation_prefix = "gpuadmit.io";
  FailureMode failure_mode = FailureMode::kOpen;
  std::vector<std::string> exempt_namespaces = {"kube-system"};
  std::vector<CustomWorkload> workloads;
  MigPolicy mig;
  SharingPolicy sharing;
  WorkloadDetectionPolicy workload_detection;
  RequirementsPolicy requirements;
  PlacementPolicy placement;
  WorkerDefaults worker_defaults;
  JobDefaults job_defaults;
  QueuePolicy queue;
  DraPolicy dra;

  // "<prefix>/<name>", the key of an annotation gpuadmit writes.
  std::string Annotation(std::string_view name) const;
  // The keys gpuadmit reads for `name`: its own, then the seeds' alias
  // ("gpu-autoscaler.io/<name>"), first present wins.
  std::vector<std::string> InputKeys(std::string_view name) const;
  bool IsExempt(std::string_view ns) const;

  bool operator==(const Policy&) const = default;
};

// One problem in a policy file; line and column are 1-based (0 when unknown).
struct PolicyIssue {
  int line = 0;
  int column = 0;
  std::string message;
};

// Parses and validates a policy document. Every unknown key, wrong type and bad value is
// reported, not just the first. An empty document is the default policy.
Result<Policy, std::vector<PolicyIssue>> ParsePolicy(std::string_view yaml_text);

}  // namespace gpuadmit
