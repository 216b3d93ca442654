#include "bench/scale/scale_report.h"

#include <cstdio>
#include <iterator>

namespace gpuadmit::bench {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void Report(const Options& o, const ScaleCluster& cluster, const std::string& machine,
            const Results& r) {
  bool full = o.nodes >= 5000;
  auto row = [](const std::string& measure, const std::string& value,
                const std::string& target = "", bool has_target = false, bool met = true) {
    std::printf("| %s | %s | %s | %s |\n", measure.c_str(), value.c_str(), target.c_str(),
                !has_target ? ""
                : met       ? "yes"
                            : "**no**");
  };
  auto us = [](const Percentiles& p) {
    return Fixed(p.median_us, 2) + " / " + Fixed(p.p99_us, 2) + " us";
  };
  size_t gpu_pods = 0;
  for (int j = 0; j < cluster.pod_count(); ++j) {
    gpu_pods += cluster.pods()[static_cast<size_t>(j)].ask != GpuAsk::kNone;
  }
  std::string commit = CommandOutput("git -C " GPUADMIT_SOURCE_DIR " rev-parse --short HEAD");
  if (!CommandOutput("git -C " GPUADMIT_SOURCE_DIR " status --porcelain --untracked-files=no")
           .empty()) {
    commit += "+dirty";
  }
  std::printf(
      "gpuadmit inventory at scale: %d nodes (%d GPUs), %d pods (%zu asking for GPUs, "
      "%d pending), %d watch events; server: %s\n",
      o.nodes, o.nodes * 8, o.pods, gpu_pods, o.pods * 3 / 100, o.events,
      o.fake_server ? "tests/fakes FakeKubeApiServer" : "bench/scale/scale_api_server.h");
  std::printf("machine: %s; gpuadmit commit %s\n\n", machine.c_str(), commit.c_str());
  std::printf("| measure | value | target | met |\n|---|---|---|---|\n");
  row("initial sync: CPU, gpuadmit process (user+sys)", Fixed(r.sync_cpu_s, 2) + " s",
      full ? "<= 5 s" : "", full, r.sync_cpu_s <= 5);
  row("initial sync: wall, Start() to first full snapshot", Fixed(r.sync_wall_s, 2) + " s");
  row("initial sync: API server process CPU", Fixed(r.server_sync_cpu_s, 2) + " s");
  row("initial sync: pods listed",
      std::to_string(r.list_requests) + " pages, " + Fixed(r.list_bytes / 1048576.0, 0) + " MiB, " +
          Fixed(static_cast<double>(r.list_bytes) / o.pods, 0) + " B a pod");
  static constexpr const char* kThreadNames[] = {"main", "nodes reflector", "pods reflector",
                                                 "publisher"};
  std::string threads;
  for (size_t i = 0; i < r.threads.size(); ++i) {
    threads += (i > 0 ? ", " : "") +
               std::string(i < std::size(kThreadNames) ? kThreadNames[i] : "other") + " " +
               Fixed(r.threads[i].second, 2);
  }
  row("initial sync: CPU by thread (s)", threads);
  row("RSS after sync (VmRSS)", Fixed(r.after_sync.rss_mib, 0) + " MiB", full ? "<= 1024 MiB" : "",
      full, r.after_sync.rss_mib <= 1024);
  row("peak RSS by then (VmHWM) / heap in use (allocator) / RSS before Start",
      Fixed(r.after_sync.hwm_mib, 0) + " / " + Fixed(r.heap_after_sync_mib, 0) + " / " +
          Fixed(r.before_start.rss_mib, 0) + " MiB");
  row("watch: events applied per second", Fixed(r.events_per_s, 0) + " /s",
      full ? ">= 50,000 /s" : "", full, r.events_per_s >= 50000);
  row("watch: CPU per event, gpuadmit process", Fixed(r.watch_cpu_us, 1) + " us");
  row("watch: snapshots published during the stream", std::to_string(r.snapshots_during_watch));
  row("watch: last event applied to its snapshot published", Fixed(r.visible_ms, 1) + " ms");
  row("watch: nodes whose used counts differ after the round trip",
      std::to_string(r.nodes_differing), "0", true, r.nodes_differing == 0);
  row("RSS after watch (VmRSS / VmHWM)",
      Fixed(r.after_watch.rss_mib, 0) + " / " + Fixed(r.after_watch.hwm_mib, 0) + " MiB");
  row("in process: JsonTape::Parse + ReadPod + UpsertPod, a pod",
      Fixed(r.parse_read_upsert_us, 2) + " us");
  row("ClusterState heap: nodes / pods",
      Fixed(r.state_nodes_mib, 0) + " MiB (" +
          Fixed(r.state_nodes_mib * 1048576 / o.nodes / 1024, 1) + " KiB a node) / " +
          Fixed(r.state_pods_mib, 0) + " MiB (" + Fixed(r.state_pods_mib * 1048576 / o.pods, 0) +
          " B a pod)");
  row("ClusterState::Snapshot(): median / max of 20",
      Fixed(r.snapshot_median_ms, 2) + " / " + Fixed(r.snapshot_max_ms, 2) + " ms");
  row("Plan, mig-3g.40gb free on many nodes: median / p99", us(r.plan_free), "<= 20 us", true,
      r.plan_free.p99_us <= 20);
  row("Plan, mig-2g.20gb exhausted, fallback walk: median / p99", us(r.plan_fallback), "<= 20 us",
      true, r.plan_fallback.p99_us <= 20);
  row("Review of pod-review-3k.json (fallback patch): median / p99", us(r.review));
  row("decisions right (3g placed, 2g falls back to 1g, review patched)",
      r.answers_right ? "yes" : "no", "yes", true, r.answers_right);
  row("API server process: CPU total / peak RSS",
      Fixed(r.server_cpu_s, 1) + " s / " + Fixed(r.server_hwm_mib, 0) + " MiB");

  std::string json = "{\"bench\":\"inventory_scale\",\"commit\":\"" + commit + "\"";
  auto add = [&json](const char* key, double value) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ",\"%s\":%.6g", key, value);
    json += buf;
  };
  add("nodes", o.nodes);
  add("pods", o.pods);
  add("events", o.events);
  add("sync_cpu_s", r.sync_cpu_s);
  add("sync_wall_s", r.sync_wall_s);
  add("rss_after_sync_mib", r.after_sync.rss_mib);
  add("hwm_after_sync_mib", r.after_sync.hwm_mib);
  add("events_per_s", r.events_per_s);
  add("watch_cpu_us_per_event", r.watch_cpu_us);
  add("snapshot_median_ms", r.snapshot_median_ms);
  add("plan_free_median_us", r.plan_free.median_us);
  add("plan_free_p99_us", r.plan_free.p99_us);
  add("plan_fallback_median_us", r.plan_fallback.median_us);
  add("plan_fallback_p99_us", r.plan_fallback.p99_us);
  add("review_median_us", r.review.median_us);
  add("review_p99_us", r.review.p99_us);
  std::printf("\n%s}\n", json.c_str());
}

}  // namespace gpuadmit::bench
