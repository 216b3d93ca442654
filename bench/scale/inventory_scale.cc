// gpuadmit_inventory_scale: the live inventory at the largest cluster Kubernetes supports (issue
// 3, "Scale"). A child process renders 5,000 GPU nodes and 150,000 pods of about 4.5 KB
// (bench/scale/scale_cluster.h) and serves them over TLS as List pages of 500 and a pods watch
// stream; this process runs the real client and inventory (KubeClient, KubeInventory) against it,
// so its CPU time and RSS are gpuadmit's alone. Measured: initial sync (CPU and wall), RSS after
// sync, watch events applied per second, the cost of ClusterState::Snapshot(), and the lookups a
// decision makes (Plan, and Review of bench/fixtures/pod-review-3k.json) on the synced snapshot.
//
//   build/bench/gpuadmit_inventory_scale           # full size, about 35 s
//   build/bench/gpuadmit_inventory_scale --quick   # 500 nodes, 15,000 pods, 20,000 events
//
// Prints a Markdown table and one JSON line. Exit status 0 when every phase ran and every answer
// was right (the targets are reported, not enforced), 1 when a phase failed, timed out or gave a
// wrong answer, 2 on a bad flag.
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/scale/counting_kube_api.h"
#include "bench/scale/process_probe.h"
#include "bench/scale/scale_api_server.h"
#include "bench/scale/scale_cluster.h"
#include "bench/scale/scale_report.h"
#include "core/admission/review.h"
#include "core/inventory/cluster_state.h"
#include "core/json/json_tape.h"
#include "core/kube/kube_objects.h"
#include "core/plan/planner.h"
#include "tests/fakes/test_cluster.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/os/read_file.h"

namespace gpuadmit::bench {
namespace {

using std::chrono::steady_clock;
using SteadyTime = steady_clock::time_point;

constexpr char kToken[] = "scale-bench-token";
// client-go's and the reflector's page size (ReflectorOptions::page_size).
constexpr int kPageSize = 500;
// 1 MiB: about 230 events a chunk, so the server's writes never pace the client's reads.
constexpr size_t kWatchBlockBytes = 1 << 20;
// Every phase is bounded: a stuck phase fails the run instead of hanging it.
constexpr std::chrono::seconds kPhaseLimit{180};

double Seconds(steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The latest published snapshot, and a wait for one that satisfies a condition.
class Published {
 public:
  void Set(std::shared_ptr<const InventorySnapshot> s) {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = std::move(s);
    at_ = steady_clock::now();
    changed_.notify_all();
  }
  // nullptr after kPhaseLimit.
  std::shared_ptr<const InventorySnapshot> WaitFor(
      const std::function<bool(const InventorySnapshot&)>& ok, SteadyTime* at = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_for(lock, kPhaseLimit, [&] { return latest_ && ok(*latest_); })) {
      return nullptr;
    }
    if (at != nullptr) *at = at_;
    return latest_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<const InventorySnapshot> latest_;
  SteadyTime at_;
};

Percentiles TimeCalls(int calls, const std::function<void()>& call) {
  std::vector<double> us(static_cast<size_t>(calls));
  for (double& t : us) {
    auto start = steady_clock::now();
    call();
    t = std::chrono::duration<double, std::micro>(steady_clock::now() - start).count();
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

// Phases 1 to 3: the real client and inventory against the server process.
bool MeasureInventory(const Options& o, Link& child, Results& r) {
  std::istringstream ready(child.Receive());
  std::string word, url, ca_file;
  double render_s = 0;
  size_t pod_list_bytes = 0, event_bytes = 0;
  if (!(ready >> word >> url >> ca_file >> render_s >> pod_list_bytes >> event_bytes) ||
      word != "ready") {
    std::fprintf(stderr, "the API server process did not start\n");
    return false;
  }
  std::fprintf(stderr,
               "API server at %s: rendered in %.1f s, %.0f MiB of pod pages, %.0f MiB "
               "of watch events\n",
               url.c_str(), render_s, pod_list_bytes / 1048576.0, event_bytes / 1048576.0);
  r.before_start = ReadMemory();
  KubeConfig config;
  config.server = url;
  config.certificate_authority = PemSource{ReadWholeFile(ca_file).value(), ca_file};
  config.token = kToken;
  auto nodes_client = KubeClient::Create(config);
  auto pods_client = KubeClient::Create(config);
  if (!nodes_client.ok() || !pods_client.ok()) return false;
  CountingApi pods_api(*pods_client.value());
  SteadyClock clock;
  Logger log(LogLevel::kWarn);
  Published published;
  auto inventory = std::make_unique<KubeInventory>(
      *nodes_client.value(), pods_api, clock, log, KubeInventoryOptions{},
      [&](std::shared_ptr<const InventorySnapshot> s) { published.Set(std::move(s)); }, nullptr);

  // 1. Initial sync: Start() to the first snapshot with every node and pod. 2. RSS.
  size_t nodes = static_cast<size_t>(o.nodes);
  size_t pods = static_cast<size_t>(o.pods);
  child.Send("cpu");
  double server_cpu0 = std::stod(child.Receive());
  double cpu0 = CpuSeconds(RUSAGE_SELF);
  auto t0 = steady_clock::now();
  inventory->Start();
  r.synced = published.WaitFor([&](const InventorySnapshot& s) {
    return s.nodes().size() == nodes && s.pod_count() == pods;
  });
  r.sync_wall_s = Seconds(steady_clock::now() - t0);
  r.sync_cpu_s = CpuSeconds(RUSAGE_SELF) - cpu0;
  child.Send("cpu");
  r.server_sync_cpu_s = std::stod(child.Receive()) - server_cpu0;
  if (!r.synced) {
    std::fprintf(stderr, "no synced snapshot within %lld s\n",
                 static_cast<long long>(kPhaseLimit.count()));
    return false;
  }
  r.threads = ThreadCpu();
  r.after_sync = ReadMemory();
  r.heap_after_sync_mib = HeapInUseMib();
  r.list_bytes = pods_api.list_bytes();
  r.list_requests = pods_api.list_requests();
  std::fprintf(stderr, "synced in %.2f s\n", r.sync_wall_s);

  // 3. Watch: from the first event's arrival to the last one applied; then until the sentinel
  // pod (the last event) is in a published snapshot.
  uint64_t published_before = inventory->snapshots_published();
  pods_api.ExpectEvents(o.events);
  double cpu1 = CpuSeconds(RUSAGE_SELF);
  child.Send("go");
  SteadyTime first, last, visible;
  bool applied = pods_api.WaitForEvents(kPhaseLimit, first, last);
  auto after = published.WaitFor(
      [&](const InventorySnapshot& s) { return s.pod_count() == pods + 1; }, &visible);
  double cpu2 = CpuSeconds(RUSAGE_SELF);
  r.after_watch = ReadMemory();
  r.snapshots_during_watch = inventory->snapshots_published() - published_before;
  inventory->Stop();
  inventory.reset();
  if (!applied || !after) {
    std::fprintf(stderr, "watch: %lld of %d events applied within %lld s\n",
                 static_cast<long long>(pods_api.seen()), o.events,
                 static_cast<long long>(kPhaseLimit.count()));
    return false;
  }
  r.events_per_s = o.events / Seconds(last - first);
  r.watch_cpu_us = (cpu2 - cpu1) / o.events * 1e6;
  r.visible_ms = Seconds(visible - last) * 1e3;
  r.nodes_differing = 0;
  for (const NodeInventory& n : r.synced->nodes()) {
    const NodeInventory* m = after->FindNode(n.name());
    if (m == nullptr || m->used != n.used) ++r.nodes_differing;
  }
  child.Send("stop");
  std::istringstream bye(child.Receive());
  bye >> r.server_cpu_s >> r.server_hwm_mib;
  std::fprintf(stderr, "watch applied %d events in %.2f s\n", o.events, Seconds(last - first));
  return true;
}

// Phase 4: ClusterState::Snapshot() at this size, on a state built from the same objects,
// read off simdjson's tape as the reflector reads them.
void MeasureSnapshot(const ScaleCluster& cluster, Results& r) {
  ClusterState state("gpuadmit.io/reservation");
  std::string text;
  auto render_start = steady_clock::now();
  for (int j = 0; j < cluster.pod_count(); ++j) {
    text.clear();
    cluster.AppendPod(text, j, cluster.InitialVersion(j));
  }
  auto render = steady_clock::now() - render_start;
  double heap0 = HeapInUseMib();
  for (int i = 0; i < cluster.node_count(); ++i) {
    text.clear();
    cluster.AppendNode(text, i);
    state.UpsertNode(ReadNode(JsonTape::Parse(text, 512)->root()));
  }
  double heap1 = HeapInUseMib();
  auto build_start = steady_clock::now();
  for (int j = 0; j < cluster.pod_count(); ++j) {
    text.clear();
    cluster.AppendPod(text, j, cluster.InitialVersion(j));
    state.UpsertPod(ReadPod(JsonTape::Parse(text, 512)->root(), state.reservation_annotation()));
  }
  r.parse_read_upsert_us =
      Seconds(steady_clock::now() - build_start - render) / cluster.pod_count() * 1e6;
  r.state_nodes_mib = heap1 - heap0;
  r.state_pods_mib = HeapInUseMib() - heap1;
  std::vector<double> ms;
  for (uint64_t version = 1; version <= 20; ++version) {
    auto start = steady_clock::now();
    InventorySnapshot s = state.Snapshot(version);
    ms.push_back(std::chrono::duration<double, std::milli>(steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  r.snapshot_median_ms = ms[ms.size() / 2];
  r.snapshot_max_ms = ms.back();
}

nlohmann::json SpecAsking(const std::string& resource) {
  return {{"containers",
           {{{"name", "main"},
             {"resources", {{"limits", {{resource, "1"}}}, {"requests", {{resource, "1"}}}}}}}}};
}

// Phase 5: the lookups a decision makes on the synced snapshot. Every 3g.40gb-offering node
// family has some free; every 2g.20gb is taken, so that ask walks to the fallback (1g.10gb).
void MeasureLookups(const Options& o, Results& r) {
  const InventorySnapshot& snapshot = *r.synced;
  Policy policy;
  // PodRequest points into its spec: the specs must outlive the requests.
  const nlohmann::json free_spec = SpecAsking("nvidia.com/mig-3g.40gb");
  const nlohmann::json gone_spec = SpecAsking("nvidia.com/mig-2g.20gb");
  PodRequest free_ask = PodRequest::From("team-10", "bench-3g", free_spec);
  PodRequest gone_ask = PodRequest::From("team-10", "bench-2g", gone_spec);
  Decision free_decision = Plan(free_ask, snapshot, policy);
  Decision gone_decision = Plan(gone_ask, snapshot, policy);
  std::string body = testing::ReadSourceFile("bench/fixtures/pod-review-3k.json");
  auto answer = Review(body, snapshot, policy);
  r.answers_right = free_decision.swaps.empty() && free_decision.claims.size() == 1 &&
                    gone_decision.swaps.size() == 1 &&
                    gone_decision.swaps[0].to == "nvidia.com/mig-1g.10gb" && answer.ok() &&
                    answer.value().kind == AdmissionOutcome::Kind::kPatch;
  r.plan_free = TimeCalls(o.lookups, [&] { Decision d = Plan(free_ask, snapshot, policy); });
  r.plan_fallback = TimeCalls(o.lookups, [&] { Decision d = Plan(gone_ask, snapshot, policy); });
  r.review = TimeCalls(o.lookups, [&] { auto a = Review(body, snapshot, policy); });
}

// The parent's side: phases 1 to 5, then the report.
int Measure(const Options& o, Link& child, pid_t child_pid) {
  std::string machine = MachineSummary();  // the load before this run adds its own
  Results r;
  bool ran = MeasureInventory(o, child, r);
  int status = 0;
  if (!ran) kill(child_pid, SIGKILL);
  waitpid(child_pid, &status, 0);
  if (!ran) return 1;
  ScaleCluster cluster(o.nodes, o.pods);
  MeasureSnapshot(cluster, r);
  MeasureLookups(o, r);
  Report(o, cluster, machine, r);
  return r.answers_right && r.nodes_differing == 0 ? 0 : 1;
}

// A whole-GPU node, a mixed-MIG node, a bound 2g.20gb pod, a pending pod and one watch event.
void PrintSamples() {
  ScaleCluster cluster(500, 15000);
  std::string out;
  cluster.AppendNode(out, 0);
  out += '\n';
  cluster.AppendNode(out, 8);
  out += '\n';
  for (int j = 0; j < cluster.pod_count(); ++j) {
    if (cluster.pods()[static_cast<size_t>(j)].ask == GpuAsk::kMig2g) {
      cluster.AppendPod(out, j, cluster.InitialVersion(j));
      out += '\n';
      break;
    }
  }
  int last = cluster.pod_count() - 1;
  cluster.AppendPod(out, last, cluster.InitialVersion(last));
  out += '\n';
  out += cluster.WatchBlocks(1, 1).front();
  std::fputs(out.c_str(), stdout);
}

constexpr char kHelp[] =
    R"(usage: gpuadmit_inventory_scale [--quick] [--events N] [--server bench|fake] [--samples]

Measures gpuadmit's live inventory (KubeClient + KubeInventory) against a generated cluster of
5,000 nodes x 8 GPUs and 150,000 pods of about 4.5 KB, served over TLS by a child process: initial
sync CPU and wall time, RSS, watch events applied per second, ClusterState::Snapshot() cost, and
the Plan / Review lookups on the synced snapshot. Targets: sync <= 5 s CPU, RSS <= 1 GiB,
>= 50,000 events/s, a lookup <= 20 us. Prints a Markdown table and a JSON line.

  --quick           500 nodes, 15,000 pods, 20,000 events (10x smaller)
  --events N        watch events to stream (default 200,000; 20,000 with --quick)
  --server fake     serve with tests/fakes FakeKubeApiServer (recorded pages); it finds a continue
                    token by parsing every earlier page, so only --quick finishes (in ~25 s)
  --samples         print a few generated objects (JSON lines) and exit
  --help            this text
)";

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) {
  using gpuadmit::bench::Options;
  Options o;
  int events = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view next = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--help" || arg == "-h") {
      std::fputs(gpuadmit::bench::kHelp, stdout);
      return 0;
    } else if (arg == "--samples") {
      gpuadmit::bench::PrintSamples();
      return 0;
    } else if (arg == "--quick") {
      o.nodes = 500;
      o.pods = 15000;
    } else if (arg == "--events" && std::atoi(next.data()) > 1) {
      events = std::atoi(argv[++i]);
    } else if (arg == "--server" && (next == "fake" || next == "bench")) {
      o.fake_server = std::string_view(argv[++i]) == "fake";
    } else {
      std::fprintf(stderr, "unknown argument %s\n%s", argv[i], gpuadmit::bench::kHelp);
      return 2;
    }
  }
  o.events = events > 1 ? events : o.nodes >= 5000 ? 200000 : 20000;

  // Fork before this process allocates anything, so that the server's pages and events are never
  // in gpuadmit's RSS, nor its CPU in gpuadmit's rusage.
  std::signal(SIGPIPE, SIG_IGN);
  int down[2];
  int up[2];
  if (pipe(down) != 0 || pipe(up) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(down[1]);
    close(up[0]);
    int code = 0;
    {
      gpuadmit::bench::Link parent(down[0], up[1]);
      code = gpuadmit::bench::ServeClusterProcess(
          {o.nodes, o.pods, o.events, o.fake_server, gpuadmit::bench::kToken,
           gpuadmit::bench::kPageSize, gpuadmit::bench::kWatchBlockBytes},
          parent);
    }
    std::fflush(stderr);
    _exit(code);
  }
  close(down[0]);
  close(up[1]);
  gpuadmit::bench::Link child(up[0], down[1]);
  return gpuadmit::bench::Measure(o, child, pid);
}
