// The report of gpuadmit_inventory_scale (inventory_scale.cc): what a run was asked for
// (Options), what it measured (Results), and how it prints them: a Markdown table with the
// targets (docs/performance.md) and one JSON line.
//
//   Report(options, cluster, MachineSummary(), results);
//
// Thread safety: called once, from the measuring process's main thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/scale/process_probe.h"
#include "bench/scale/scale_cluster.h"
#include "core/inventory/inventory.h"

namespace gpuadmit::bench {

struct Options {
  int nodes = 5000;
  int pods = 150000;
  int events = 200000;
  int lookups = 10000;
  bool fake_server = false;
};

struct Percentiles {
  double median_us = 0;
  double p99_us = 0;
};

struct Results {
  // 1, 2: initial sync.
  double sync_cpu_s = 0;
  double sync_wall_s = 0;
  double server_sync_cpu_s = 0;
  size_t list_bytes = 0;
  int list_requests = 0;
  std::vector<std::pair<int, double>> threads;  // {tid, CPU s} at sync
  Memory before_start;
  Memory after_sync;
  double heap_after_sync_mib = 0;
  std::shared_ptr<const InventorySnapshot> synced;
  // 3: watch.
  double events_per_s = 0;
  double watch_cpu_us = 0;  // per event, the whole process
  double visible_ms = 0;    // last event applied to its snapshot published
  uint64_t snapshots_during_watch = 0;
  int nodes_differing = -1;  // used counts after the round trip vs at sync; 0 is right
  Memory after_watch;
  double server_cpu_s = 0;
  double server_hwm_mib = 0;
  // 4: snapshot.
  double parse_read_upsert_us = 0;  // a pod, in process
  double state_nodes_mib = 0;       // ClusterState's heap for the nodes, then for the pods
  double state_pods_mib = 0;
  double snapshot_median_ms = 0;
  double snapshot_max_ms = 0;
  // 5: lookups.
  Percentiles plan_free;
  Percentiles plan_fallback;
  Percentiles review;
  bool answers_right = false;
};

// `v` with `digits` decimals.
std::string Fixed(double v, int digits);

// Prints the table (the targets met or not at full size, 5,000 nodes) and the JSON line.
void Report(const Options& o, const ScaleCluster& cluster, const std::string& machine,
            const Results& r);

}  // namespace gpuadmit::bench
