// gpuadmit_load: an HTTPS keep-alive load client for bench/load/run.sh (--client gpuadmit_load),
// for the latency of connections that are already open; closed loop, or open loop with --rate.
//
// wrk starts its clock while its connections are still making their TLS handshakes: at c=256
// the first request of each connection waits behind up to 256 handshakes on both sides, about
// 100 ms on 2 vCPUs, for nginx as for gpuadmit, and those first requests are the slowest 0.1%
// of an 8 s run. The apiserver keeps its connections to a webhook open (90 s idle), so what it
// sees is the latency on open connections. This client opens and handshakes every connection,
// warms up on them, then measures.
//
// Closed loop (the default): each connection sends the request, reads the whole answer, and
// sends it again at once. A server that stalls is sent less during the stall, so the stall
// shows in few latencies (coordinated omission); what this measures is throughput at a
// concurrency.
//
// Open loop (--rate R): request i of the run is due at t0 + i / R whatever the answers do,
// the requests split over the threads in turn (bench/load/open_loop_schedule.h), each sent on a
// free connection of its thread, and its latency counted from its due time. HTTP/1.1 carries
// one request at a time on a connection: a request that finds every connection of its thread
// busy waits for one, and the wait is part of its latency (`queued` counts them). So is a
// client thread's own lateness (`send_lag_us`: due time to first write). The schedule runs
// through the warm-up and the window; the requests due within the window are measured, every
// one of them however late its answer: after the window the client waits up to --timeout for
// the last answers. A request not answered (or, waiting for a connection, not sent) within
// --timeout of its due time is a timeout.
//
//   build/bench/gpuadmit_load --url https://127.0.0.1:8443/mutate --body FILE
//       [--connections 64] [--threads 2] [--warmup 1] [--duration 10] [--timeout 2]
//       [--rate R] [--server-pid PID]... [--latencies FILE]
//
// Prints one line, the shape of admission.lua's WRK_RESULT so run.sh reads either:
//   LOAD_RESULT {"requests":N,"duration_us":N,"bytes":N,"rps":F,"setup_ms":F,
//                "errors":{"connect":N,"read":N,"write":N,"status":N,"timeout":N,
//                          "non2xx":N,"total":N},
//                "latency_us":{"p50":N,"p90":N,"p99":N,"p999":N,"max":N,"mean":F,"stdev":F},
//                "mode":"closed"}
// and with --rate, instead of the last field:
//                "mode":"open","rate":F,"scheduled":N,"queued":N,
//                "send_lag_us":{"p50":N,"p99":N,"p999":N,"max":N}}
// and with --server-pid, before the closing brace:
//                ,"server_cpu_us":N,"server_cpu_us_per_request":F
// the CPU time of the given processes (all their threads, bench/load/process_cpu.h) from the
// start of the measured window to its end, and that divided by the requests of the window
// (open loop: scheduled; closed loop: requests). Left out when /proc cannot say.
// and last, whatever the options:
//                ,"steal_pct":F
// the machine's CPU time stolen by the hypervisor over the same window, as a percentage of all
// of it (bench/load/host_steal.h); left out where /proc/stat has no steal.
// requests: answers counted (closed loop: to requests sent within the measured window and
// complete before it ends; open loop: to requests due within it); rps: requests / window, the
// achieved rate; scheduled: requests due within the window (rate x duration).
// Latencies are exact (every one is kept and sorted), in microseconds. A connection that fails,
// or whose answer takes longer than --timeout, counts an error and sends nothing more.
// With --latencies FILE, every latency of the window is also written to FILE, one a line.
// Exit status: 0 measured, 1 the connections could not all be opened or FILE not written, 2 bad
// usage.
#include <openssl/ssl.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/load/host_steal.h"
#include "bench/load/latency_summary.h"
#include "bench/load/load_options.h"
#include "bench/load/load_worker.h"
#include "bench/load/process_cpu.h"

namespace gpuadmit::bench {
namespace {

constexpr char kUsage[] =
    "usage: gpuadmit_load --url https://IPV4:PORT/PATH --body FILE [--connections N]\n"
    "                     [--threads N] [--warmup S] [--duration S] [--timeout S] [--rate R]\n"
    "                     [--server-pid PID]... [--latencies FILE]\n"
    "  --connections N  keep-alive connections, opened before the clock starts (default 64)\n"
    "  --threads N      client threads, each with its share of the connections (default 2)\n"
    "  --warmup S       seconds of load before the measured window (default 1)\n"
    "  --duration S     seconds measured (default 10)\n"
    "  --timeout S      an answer later than this is a timeout error (default 2)\n"
    "  --rate R         open loop: R requests a second in all, each due at t0 + i/R whatever\n"
    "                   the answers do, its latency counted from that due time (waiting for a\n"
    "                   free connection included). Default: closed loop (each connection sends\n"
    "                   again as soon as its answer is read)\n"
    "  --server-pid PID the server's process (repeatable, e.g. nginx's master and workers):\n"
    "                   report its CPU time over the measured window, and per request\n"
    "  --latencies FILE write every latency of the measured window to FILE, in microseconds,\n"
    "                   one a line, so that several runs can be pooled before percentiles\n";

void AppendF(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void AppendF(std::string& out, const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  if (n > 0) out.append(buffer, std::min(static_cast<size_t>(n), sizeof buffer - 1));
}

using ull = unsigned long long;

// The LOAD_RESULT line (the file comment above gives its shape).
std::string ResultLine(const Options& o, const std::vector<ThreadResult>& results, double setup_ms,
                       std::optional<uint64_t> server_cpu_ns, std::optional<double> steal_pct) {
  std::vector<uint32_t> all, lags;
  Errors e;
  uint64_t bytes = 0, non2xx = 0, scheduled = 0, queued = 0;
  for (const ThreadResult& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    lags.insert(lags.end(), r.send_lag_us.begin(), r.send_lag_us.end());
    bytes += r.bytes;
    non2xx += r.non2xx;
    scheduled += r.scheduled;
    queued += r.queued;
    e.connect += r.errors.connect;
    e.read += r.errors.read;
    e.write += r.errors.write;
    e.status += r.errors.status;
    e.timeout += r.errors.timeout;
  }
  LatencySummary l = SummarizeLatencies(std::move(all));
  uint64_t duration_us = static_cast<uint64_t>(o.duration_s) * 1000000;
  uint64_t total = e.connect + e.read + e.write + e.timeout + non2xx;
  std::string line = "LOAD_RESULT {";
  AppendF(line, "\"requests\":%llu,\"duration_us\":%llu,\"bytes\":%llu,\"rps\":%.1f,",
          static_cast<ull>(l.count), static_cast<ull>(duration_us), static_cast<ull>(bytes),
          static_cast<double>(l.count) * 1e6 / static_cast<double>(duration_us));
  AppendF(line,
          "\"setup_ms\":%.1f,\"errors\":{\"connect\":%llu,\"read\":%llu,\"write\":%llu,"
          "\"status\":%llu,\"timeout\":%llu,\"non2xx\":%llu,\"total\":%llu},",
          setup_ms, static_cast<ull>(e.connect), static_cast<ull>(e.read),
          static_cast<ull>(e.write), static_cast<ull>(e.status), static_cast<ull>(e.timeout),
          static_cast<ull>(non2xx), static_cast<ull>(total));
  AppendF(line,
          "\"latency_us\":{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu,"
          "\"mean\":%.1f,\"stdev\":%.1f},",
          static_cast<ull>(l.p50), static_cast<ull>(l.p90), static_cast<ull>(l.p99),
          static_cast<ull>(l.p999), static_cast<ull>(l.max), l.mean, l.stdev);
  if (o.rate > 0) {
    LatencySummary lag = SummarizeLatencies(std::move(lags));
    AppendF(line,
            "\"mode\":\"open\",\"rate\":%.1f,\"scheduled\":%llu,\"queued\":%llu,"
            "\"send_lag_us\":{\"p50\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu}",
            o.rate, static_cast<ull>(scheduled), static_cast<ull>(queued),
            static_cast<ull>(lag.p50), static_cast<ull>(lag.p99), static_cast<ull>(lag.p999),
            static_cast<ull>(lag.max));
  } else {
    line += "\"mode\":\"closed\"";
  }
  uint64_t window_requests = o.rate > 0 ? scheduled : l.count;
  if (server_cpu_ns && window_requests > 0) {
    double cpu_us = static_cast<double>(*server_cpu_ns) / 1e3;
    AppendF(line, ",\"server_cpu_us\":%.0f,\"server_cpu_us_per_request\":%.1f", cpu_us,
            cpu_us / static_cast<double>(window_requests));
  }
  if (steal_pct) AppendF(line, ",\"steal_pct\":%.2f", *steal_pct);
  line += "}";
  return line;
}

// Writes every latency of the window to `path`, one a line (--latencies); false, having said why,
// when it cannot.
bool WriteLatencies(const std::string& path, const std::vector<ThreadResult>& results) {
  std::ofstream out(path, std::ios::trunc);
  for (const ThreadResult& r : results) {
    for (uint32_t us : r.latencies_us) out << us << '\n';
  }
  out.close();
  if (out) return true;
  std::fprintf(stderr, "gpuadmit_load: cannot write the latencies to %s\n", path.c_str());
  return false;
}

// The CPU time --server-pid's processes spent between two reads of it, and the host's steal
// over the same window.
class WindowCpu {
 public:
  explicit WindowCpu(const std::vector<int>& pids) : pids_(pids) {}
  void Start() {
    start_ = Read();
    ticks_start_ = ReadCpuTicks();
  }
  void Stop() {
    stop_ = Read();
    ticks_stop_ = ReadCpuTicks();
  }
  std::optional<double> steal_pct() const {
    if (!ticks_start_ || !ticks_stop_) return std::nullopt;
    return StealPercent(*ticks_start_, *ticks_stop_);
  }
  std::optional<uint64_t> spent() const {
    if (!start_ || !stop_ || *stop_ < *start_) return std::nullopt;
    return *stop_ - *start_;
  }

 private:
  std::optional<uint64_t> Read() const {
    return pids_.empty() ? std::nullopt : ProcessesCpuNs(pids_);
  }
  const std::vector<int>& pids_;
  std::optional<uint64_t> start_, stop_;
  std::optional<CpuTicks> ticks_start_, ticks_stop_;
};

// Moves the workers through warm-up and the measured window (all connections are open), and
// reads the server's CPU time as the window starts and ends.
void Drive(const Options& o, Shared& shared, WindowCpu& cpu) {
  if (o.rate <= 0) {
    shared.phase.store(Phase::kWarmup, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::seconds(o.warmup_s));
    shared.measure_from = Clock::now();
    shared.measure_until = shared.measure_from + std::chrono::seconds(o.duration_s);
    cpu.Start();
    shared.phase.store(Phase::kMeasure, std::memory_order_release);
    std::this_thread::sleep_until(shared.measure_until);
    cpu.Stop();
    return;
  }
  // Request 0 is due 20 ms from now: two of the workers' 10 ms polls, so every worker has seen
  // the phase move on before anything is due, and the first requests do not start late.
  shared.schedule_start = Clock::now() + std::chrono::milliseconds(20);
  shared.measure_from = shared.schedule_start + std::chrono::seconds(o.warmup_s);
  shared.measure_until = shared.measure_from + std::chrono::seconds(o.duration_s);
  shared.phase.store(Phase::kWarmup, std::memory_order_release);
  std::this_thread::sleep_until(shared.measure_from);
  cpu.Start();
  shared.phase.store(Phase::kMeasure, std::memory_order_release);
  // The answers to the window's last requests, up to the timeout (swept every 100 ms) after
  // which the workers count them as timeouts.
  auto give_up =
      shared.measure_until + std::chrono::seconds(o.timeout_s) + std::chrono::milliseconds(500);
  std::this_thread::sleep_until(shared.measure_until);
  cpu.Stop();
  while (shared.drained.load() < o.threads && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int Main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::ifstream in(o.body_file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gpuadmit_load: cannot read %s\n", o.body_file.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  std::string request =
      "POST " + o.path + " HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;

  // Loopback only, a throw-away certificate: the client does not verify it (wrk does not
  // either); TLS 1.2 or later, OpenSSL's default ciphers, as wrk.
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);

  Shared shared;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int share = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(o, ctx.get(), request, share, t, o.threads, shared));
  }
  std::vector<ThreadResult> results(workers.size());
  std::vector<std::thread> threads;
  auto setup_start = Clock::now();
  for (size_t t = 0; t < workers.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = workers[t]->Run(); });
  }
  auto give_up = setup_start + std::chrono::seconds(30);
  while (shared.connected.load() + shared.failed.load() < o.connections && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double setup_ms = std::chrono::duration<double, std::milli>(Clock::now() - setup_start).count();
  bool all_open = shared.connected.load() == o.connections;
  WindowCpu cpu(o.server_pids);
  if (all_open) Drive(o, shared, cpu);
  shared.phase.store(Phase::kStop, std::memory_order_release);
  for (auto& t : threads) t.join();
  if (!all_open) {
    std::fprintf(stderr, "gpuadmit_load: %d of %d connections opened within 30 s\n",
                 shared.connected.load(), o.connections);
    return 1;
  }
  if (!o.server_pids.empty() && !cpu.spent()) {
    std::fprintf(stderr, "gpuadmit_load: the CPU time of --server-pid could not be read\n");
  }
  if (!o.latencies_file.empty() && !WriteLatencies(o.latencies_file, results)) return 1;
  std::printf("%s\n", ResultLine(o, results, setup_ms, cpu.spent(), cpu.steal_pct()).c_str());
  return 0;
}

}  // namespace
}  // namespace gpuadmit::bench

int main(int argc, char** argv) { return gpuadmit::bench::Main(argc, argv); }
