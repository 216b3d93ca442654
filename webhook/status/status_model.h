// StatusModel: what GET /status and /status.json show, gathered from what serve holds in
// memory: the AdmissionHandler's snapshot, gauges, GPU metrics and recent decisions, the
// metrics, the policy as loaded, and the build. The HTML page (status_page.h) and the JSON
// (status_json.h) render the same model, so scripts and tests see what people see.
//
//   auto query = ParseStatusQuery("node=gpu-a&page=2&per_page=50");  // 400 on error
//   StatusModel model = CollectStatus(sources, query.value(), now_unix_ms);
//
// Cost: the overview reads the gauges computed once per snapshot; the node list filters every
// node's name (O(nodes)) and builds views only for the page shown, so a page of 5,000 nodes
// takes a few milliseconds (bench/status_bench.cc).
//
// Thread safety: CollectStatus may run on any thread; it loads each source once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/result.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/decision_log.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

struct StatusQuery {
  std::string node;      // keep nodes whose name or GPU product contains this; "" all
  size_t page = 1;       // 1-based
  size_t per_page = 20;  // 1..kMaxPerPage

  static constexpr size_t kMaxPerPage = 100;  // 100 nodes of 8 GPUs: about 2 MB of HTML
};

// Reads `node`, `page` and `per_page` from a URL query ("node=a100&page=2"), percent-decoded;
// other keys are ignored. Errors name the bad value (answered 400).
Result<StatusQuery> ParseStatusQuery(std::string_view query);

// What the status page reads besides the handler; serve fills it once.
struct StatusSources {
  const AdmissionHandler& handler;
  const Metrics& metrics;
  const SnapshotPublisher* publisher = nullptr;  // the resources table's gauges; null: no table
  std::string inventory_source;  // "cluster file demo.json", "Kubernetes API https://..."
  // The policy as its file said when it loaded; empty text when serve runs on the built-in
  // default.
  std::function<std::string()> policy_path;
  std::function<std::string()> policy_text;
  std::function<int64_t()> policy_loaded_unix_ms;
  std::vector<std::pair<std::string, std::string>> build;  // ("version", "0.1.0"), ...
  std::function<bool()> ready;                             // /readyz's answer
};

struct ResourceView {
  std::string resource;  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
  int64_t allocatable = 0, used = 0, queued = 0, reserved = 0, free = 0;
  int64_t stranded_slices = -1;  // MIG profiles (cluster-wide): free slices no profile can use
  bool dra = false;              // a node's: counted from its DRA devices, not its allocatable
};

struct NodeView {
  std::string name;
  std::string product;
  int64_t gpus = 0;  // nvidia.com/gpu.count (the label), else allocatable nvidia.com/gpu
  bool ready = false;
  bool unschedulable = false;
  std::vector<std::string> dra_pools;   // "driver/pool" of its DRA devices
  std::vector<ResourceView> resources;  // reserved is 0: the ledger is counted cluster-wide
  std::vector<GpuMetrics> devices;      // the exporter's, GPUs before their MIG instances
};

// A pod held by the capacity gate (docs/queue.md), as the inventory shows it.
struct QueuedView {
  std::string pod;   // namespace/name
  std::string asks;  // its managed resources, "nvidia.com/gpu=8"
  int32_t priority = 0;
  std::string created;  // creationTimestamp: its place in the queue within its priority
};

// The most queued pods listed; the count says how many there are.
inline constexpr size_t kMaxQueuedShown = 100;

struct StatusModel {
  int64_t now_unix_ms = 0;
  bool ready = false;
  std::vector<std::pair<std::string, std::string>> build;

  // Inventory.
  std::string inventory_source;
  int64_t inventory_at_unix_ms = 0;  // 0: no snapshot yet
  uint64_t inventory_version = 0;
  size_t node_count = 0;
  size_t pod_count = 0;
  std::vector<std::pair<std::string, int64_t>> gpus_by_product;  // product ("" unknown), GPUs
  std::vector<ResourceView> resources;                           // cluster-wide, by name

  // GPU metrics.
  int64_t metrics_age_ms = -1;  // -1: none loaded
  size_t metrics_nodes = 0;

  // Decisions.
  OutcomeCounts last_15_minutes{};
  uint64_t fail_open_total = 0;
  uint64_t fail_closed_total = 0;
  std::vector<DecisionRecord> recent;  // newest first

  // The capacity queue: the policy's switch, the pods its gate holds, and the first
  // kMaxQueuedShown of them in queue order (priority, then arrival, then name).
  bool queue_enabled = false;
  size_t queue_waiting = 0;
  std::vector<QueuedView> queue;

  int64_t certificate_expiry_unix = 0;  // 0: not known

  // Policy.
  std::string policy_path;
  std::string policy_text;
  std::string policy_digest;  // first 12 hex digits of SHA-256 of the text
  int64_t policy_loaded_unix_ms = 0;

  // The node list: the query, how many nodes matched, and the page of them.
  StatusQuery query;
  size_t matching_nodes = 0;
  size_t pages = 1;
  std::vector<NodeView> nodes;
};

StatusModel CollectStatus(const StatusSources& sources, const StatusQuery& query,
                          int64_t now_unix_ms);

}  // namespace gpuadmit
