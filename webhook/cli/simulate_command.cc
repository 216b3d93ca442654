// gpuadmit simulate: an arrival stream replayed through the review code serve runs against a
// simulated cluster, where a model of kube-scheduler binds what it can; the baseline (the same
// stream without gpuadmit) always runs beside each policy. From a --cluster file and a
// --workload file, or from the Alibaba GPU trace (--trace alibaba-openb --nodes --pods).
// docs/decision-quality.md explains the figures and the trace's mapping.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/plan/node_ranking.h"
#include "core/sim/alibaba_trace.h"
#include "core/sim/claim_replay.h"
#include "core/sim/curve_chart.h"
#include "core/sim/oracle.h"
#include "core/sim/replay.h"
#include "core/sim/simulation_report.h"
#include "core/sim/workload_stream.h"
#include "webhook/cli/cli_support.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/flags.h"
#include "webhook/os/read_file.h"
#include "webhook/sources/config_files.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kTraceName[] = "alibaba-openb";
constexpr PlacementStrategy kStrategies[] = {
    PlacementStrategy::kMostIdle, PlacementStrategy::kBestFit, PlacementStrategy::kFirstFit,
    PlacementStrategy::kWorstFit, PlacementStrategy::kScore,   PlacementStrategy::kFragmentation};

struct NamedPolicy {
  std::string name;
  Policy policy;
};

// The stream and the cluster it plays on, with a seed for each order of the stream (one order,
// and no seed, for a workload file).
struct Scenario {
  json cluster;
  std::vector<std::optional<uint64_t>> seeds;
  std::function<std::vector<Arrival>(std::optional<uint64_t>)> arrivals;
};

bool ParseNumber(const std::string& text, double& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A number flag's value (`fallback` when absent), or an error naming the flag.
Result<double> NumberFlag(const Flags& f, const std::string& name, double fallback, double min) {
  if (!f.Has(name)) return fallback;
  double v = 0;
  if (!ParseNumber(f.Value(name), v) || v < min) {
    return Error{"--" + name + " \"" + f.Value(name) + "\" is not a number >= " + json(min).dump()};
  }
  return v;
}

// --seed N, repeatable, or a range A-B (both included); 0 when none is given.
Result<std::vector<std::optional<uint64_t>>> Seeds(const Flags& f) {
  std::vector<std::optional<uint64_t>> out;
  for (const std::string& text : f.Values("seed")) {
    size_t dash = text.find('-');
    std::string first = text.substr(0, dash);
    std::string last = dash == std::string::npos ? first : text.substr(dash + 1);
    uint64_t a = 0;
    uint64_t b = 0;
    auto [end_a, ec_a] = std::from_chars(first.data(), first.data() + first.size(), a);
    auto [end_b, ec_b] = std::from_chars(last.data(), last.data() + last.size(), b);
    if (ec_a != std::errc() || ec_b != std::errc() || end_a != first.data() + first.size() ||
        end_b != last.data() + last.size() || b < a || b - a >= 1000) {
      return Error{"--seed \"" + text + "\" is not a number or a range such as 0-9"};
    }
    for (uint64_t s = a; s <= b; ++s) out.push_back(s);
  }
  if (out.empty()) out.push_back(0);
  return out;
}

// The policies to compare: each --policy file (the built-in defaults when none), once per
// --strategy when some are given ("policy.yaml/best-fit").
Result<std::vector<NamedPolicy>> Policies(const Flags& f) {
  std::vector<NamedPolicy> base;
  for (const std::string& path : f.Values("policy")) {
    auto policy = LoadPolicyFile(path);
    if (!policy.ok()) return policy.error();
    base.push_back({BaseName(path), policy.value()});
  }
  if (base.empty()) base.push_back({"defaults", Policy{}});
  if (f.Has("queue")) {
    // --queue: each policy again with its queue enabled ("policy.yaml+queue"), beside itself
    // with the queue off, so one run compares the two.
    std::vector<NamedPolicy> both;
    for (NamedPolicy& p : base) {
      NamedPolicy queued = p;
      p.policy.queue.enabled = false;
      queued.policy.queue.enabled = true;
      queued.name += "+queue";
      both.push_back(std::move(p));
      both.push_back(std::move(queued));
    }
    base = std::move(both);
  }
  std::vector<std::string> strategies = f.Values("strategy");
  if (strategies.empty()) return base;
  std::vector<NamedPolicy> out;
  for (const NamedPolicy& p : base) {
    for (const std::string& name : strategies) {
      auto it = std::find_if(std::begin(kStrategies), std::end(kStrategies),
                             [&](PlacementStrategy s) { return StrategyName(s) == name; });
      if (it == std::end(kStrategies)) {
        return Error{"--strategy \"" + name + "\" is not one of most-idle, best-fit, first-fit, " +
                     "worst-fit, score, fragmentation"};
      }
      NamedPolicy variant = p;
      variant.name += "/" + name;
      variant.policy.placement.strategy = *it;
      out.push_back(std::move(variant));
    }
  }
  return out;
}

Result<Scenario> TraceScenario(const Flags& f) {
  if (f.Value("trace") != kTraceName) {
    return Error{"--trace \"" + f.Value("trace") + "\" is not known; the one trace is " +
                 kTraceName};
  }
  if (!f.Has("nodes") || !f.Has("pods")) {
    return Error{"--trace needs --nodes NODES.csv and --pods PODS.csv"};
  }
  auto node_text = ReadWholeFile(f.Value("nodes"));
  if (!node_text.ok()) return node_text.error();
  auto pod_text = ReadWholeFile(f.Value("pods"));
  if (!pod_text.ok()) return pod_text.error();
  auto nodes = ReadTraceNodes(node_text.value());
  if (!nodes.ok()) return Error{f.Value("nodes") + ": " + nodes.error().message};
  auto pods = ReadTracePods(pod_text.value());
  if (!pods.ok()) return Error{f.Value("pods") + ": " + pods.error().message};
  TraceMapping mapping;
  auto fraction = NumberFlag(f, "shared-fraction", mapping.shared_fraction, 0);
  auto replicas = NumberFlag(f, "shared-replicas", mapping.shared_replicas, 1);
  auto inflate = NumberFlag(f, "inflate", mapping.inflate_to * 100, 0);
  for (const auto* r : {&fraction, &replicas, &inflate}) {
    if (!r->ok()) return r->error();
  }
  if (fraction.value() > 1) return Error{"--shared-fraction is a share of nodes, 0 to 1"};
  mapping.shared_fraction = fraction.value();
  mapping.shared_replicas = static_cast<int64_t>(replicas.value());
  mapping.inflate_to = inflate.value() / 100;
  double capacity = 0;
  for (const TraceNode& n : nodes.value()) capacity += static_cast<double>(n.gpus);
  if (f.Has("trace-times")) {
    // The trace's own creation and deletion times (no shuffle, no inflation): one order.
    auto speedup = NumberFlag(f, "trace-times", 1, 1e-9);
    if (!speedup.ok()) return speedup.error();
    return Scenario{TraceCluster(nodes.value(), mapping),
                    {std::nullopt},
                    [pods = pods.value(), mapping, s = speedup.value()](std::optional<uint64_t>) {
                      return TraceArrivalsTimed(pods, mapping, s);
                    }};
  }
  auto seeds = Seeds(f);
  if (!seeds.ok()) return seeds.error();
  return Scenario{TraceCluster(nodes.value(), mapping), seeds.value(),
                  [pods = pods.value(), mapping, capacity](std::optional<uint64_t> seed) {
                    return TraceArrivals(pods, mapping, seed.value_or(0), capacity);
                  }};
}

Result<Scenario> FileScenario(const Flags& f) {
  if (!f.Has("cluster") || !f.Has("workload")) {
    return Error{"give --cluster FILE and --workload FILE, or --trace " + std::string(kTraceName) +
                 " --nodes FILE --pods FILE"};
  }
  auto cluster = LoadClusterList(f.Value("cluster"));
  if (!cluster.ok()) return cluster.error();
  auto text = ReadWholeFile(f.Value("workload"));
  if (!text.ok()) return text.error();
  auto arrivals = ParseWorkloadStream(text.value());
  if (!arrivals.ok()) return Error{f.Value("workload") + ": " + arrivals.error().message};
  return Scenario{cluster.value(),
                  {std::nullopt},
                  [stream = arrivals.value()](std::optional<uint64_t>) { return stream; }};
}

}  // namespace

int SimulateCommand(int argc, char** argv) {
  Flags f({"cluster", "workload", "trace", "nodes", "pods", "policy", "strategy", "seed",
           "replicas", "watch-delay", "bind-delay", "nodes-to-score", "shared-fraction",
           "shared-replicas", "inflate", "o", "output", "svg", "trace-times"},
          {"queue", "drop-unplaced"}, {"policy", "strategy", "seed"});
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return UsageError("simulate", err);
  if (!f.positional().empty()) return UsageError("simulate", "no positional arguments");
  std::string format = f.Value("o", f.Value("output", "table"));
  if (format != "table" && format != "json") {
    return UsageError("simulate", "-o must be table or json");
  }
  if (f.Has("trace") && (f.Has("cluster") || f.Has("workload"))) {
    return UsageError("simulate",
                      "--trace replaces --cluster and --workload; give one or the other");
  }
  ReplayOptions options;
  auto watch = NumberFlag(f, "watch-delay", options.watch_delay, 0);
  auto bind = NumberFlag(f, "bind-delay", options.bind_delay, 0);
  auto replicas = NumberFlag(f, "replicas", options.replicas, 1);
  auto to_score = NumberFlag(f, "nodes-to-score", options.percentage_of_nodes_to_score, 0);
  for (const auto* r : {&watch, &bind, &replicas, &to_score}) {
    if (!r->ok()) return UsageError("simulate", r->error().message);
  }
  options.watch_delay = watch.value();
  options.bind_delay = bind.value();
  options.replicas = static_cast<int>(replicas.value());
  if (to_score.value() > 100) return UsageError("simulate", "--nodes-to-score is a percentage");
  options.percentage_of_nodes_to_score = static_cast<int>(to_score.value());
  auto policies = Policies(f);
  if (!policies.ok()) return ConfigError(policies.error().message);
  auto scenario = f.Has("trace") ? TraceScenario(f) : FileScenario(f);
  if (!scenario.ok()) return ConfigError(scenario.error().message);
  const Scenario& s = scenario.value();

  json runs = json::array();
  CurveChart chart{"", "arrived GPU demand (% of capacity)", "unallocated GPUs (% of capacity)"};
  for (const std::optional<uint64_t>& seed : s.seeds) {
    std::vector<Arrival> arrivals = s.arrivals(seed);
    // DRA devices and pods naming claim templates: the claims are what is placed.
    const bool claims = IsClaimScenario(s.cluster, arrivals);
    OracleResult oracle = claims ? OracleResult{} : MigOracle(s.cluster, arrivals);
    auto record = [&](const std::string& name, const Policy* policy) -> bool {
      auto result = claims ? ClaimReplay(s.cluster, arrivals, policy, f.Has("drop-unplaced"))
                           : Replay(s.cluster, arrivals, policy, options);
      if (!result.ok()) {
        ConfigError(result.error().message);
        return false;
      }
      json run = RunJson(name, result.value(), seed);
      if (oracle.applies) run["oracle_placeable_pods"] = oracle.placeable;
      runs.push_back(std::move(run));
      if (seed == s.seeds.front()) chart.series.push_back(CurveOf(name, result.value()));
      return true;
    };
    if (!record("baseline", nullptr)) return kExitConfig;
    for (const NamedPolicy& p : policies.value()) {
      if (!record(p.name, &p.policy)) return kExitConfig;
    }
  }
  if (f.Has("svg")) {
    chart.title = f.Has("trace") ? std::string("Alibaba GPU trace (openb), seed ") +
                                       std::to_string(s.seeds.front().value_or(0))
                                 : "gpuadmit simulate: " + BaseName(f.Value("workload"));
    std::ofstream out(f.Value("svg"), std::ios::binary | std::ios::trunc);
    out << CurveChartSvg(chart);
    out.close();
    if (!out) return ConfigError("cannot write " + f.Value("svg"));
  }
  std::vector<json> list(runs.begin(), runs.end());
  if (format == "json") {
    std::cout << json{{"runs", runs}, {"summary", SummaryJson(list)}}.dump(2) << "\n";
  } else {
    std::cout << RunTable(list);
  }
  return kExitOk;
}

}  // namespace gpuadmit
