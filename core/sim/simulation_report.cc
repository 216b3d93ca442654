#include "core/sim/simulation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

namespace gpuadmit {
namespace {

using nlohmann::json;

json OrNull(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

std::string Cell(const json& v, const char* format_spec, double scale = 1) {
  if (!v.is_number()) return "-";
  return fmt::format(fmt::runtime(format_spec), v.get<double>() * scale);
}

}  // namespace

std::optional<double> Percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t half = values.size() / 2;
  return values.size() % 2 == 1 ? values[half] : (values[half - 1] + values[half]) / 2;
}

std::optional<double> Mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// The curve's samples at arrivals: the last sample, at the end of the replay, is left out (the
// last pod may leave long after the last arrival).
std::span<const CurveSample> ArrivalSamples(const ReplayResult& result) {
  std::span<const CurveSample> c = result.curve;
  return c.size() > 1 ? c.first(c.size() - 1) : c;
}

std::optional<double> MeanAllocated(const ReplayResult& result) {
  std::span<const CurveSample> c = ArrivalSamples(result);
  if (c.size() < 2 || c.back().at <= c.front().at) return std::nullopt;
  double area = 0;
  for (size_t i = 0; i + 1 < c.size(); ++i) area += c[i].allocated_gpus * (c[i + 1].at - c[i].at);
  return area / (c.back().at - c.front().at);
}

std::vector<double> AllocatedAtTimeShares(const ReplayResult& result, int points) {
  std::vector<double> out;
  std::span<const CurveSample> c = ArrivalSamples(result);
  if (c.empty() || points < 1) return out;
  size_t i = 0;
  for (int k = 0; k <= points; ++k) {
    double t = c.front().at + (c.back().at - c.front().at) * k / points;
    while (i + 1 < c.size() && c[i + 1].at <= t) ++i;
    out.push_back(c[i].allocated_gpus);
  }
  return out;
}

std::optional<double> UnallocatedAtFullDemand(const ReplayResult& result) {
  if (result.capacity_gpus <= 0) return std::nullopt;
  for (const CurveSample& s : result.curve) {
    // 1e-9: demand sums GPU fractions, which need not add up to the capacity exactly.
    if (s.demand_gpus + 1e-9 >= result.capacity_gpus) {
      return 1 - s.allocated_gpus / result.capacity_gpus;
    }
  }
  return std::nullopt;
}

json RunJson(const std::string& name, const ReplayResult& r, std::optional<uint64_t> seed) {
  json out = {{"name", name}};
  if (seed) out["seed"] = *seed;
  out["arrived_pods"] = r.arrived;
  out["placed_pods"] = r.placed;
  out["pending_pods"] = r.pending;
  out["gpu_pods_placed"] = r.gpu_pods_placed;
  out["gpu_pods_pending"] = r.gpu_pods_arrived - r.gpu_pods_placed;
  out["capacity_gpus"] = r.capacity_gpus;
  out["shared_gpus"] = r.shared_gpus;
  out["allocated_gpus"] = r.allocated_gpus;
  out["demand_gpus"] = r.demand_gpus;
  out["unallocated_ratio_at_full_demand"] = OrNull(UnallocatedAtFullDemand(r));
  out["fallbacks"] = r.fallbacks;
  out["sharing_conversions"] = r.sharing_conversions;
  out["preferred_affinity_honoured_ratio"] =
      r.preferred > 0 ? json(static_cast<double>(r.preferred_honoured) / r.preferred)
                      : json(nullptr);
  out["wait_seconds_p50"] = OrNull(Percentile(r.waits, 0.5));
  out["wait_seconds_p99"] = OrNull(Percentile(r.waits, 0.99));
  out["wait_seconds_mean"] = OrNull(Mean(r.waits));
  out["multi_gpu_wait_seconds_mean"] = OrNull(Mean(r.multi_gpu_waits));
  out["multi_gpu_wait_seconds_p99"] = OrNull(Percentile(r.multi_gpu_waits, 0.99));
  out["queued_pods"] = r.queued;
  out["queue_timeouts"] = r.queue_timeouts;
  out["queue_unplaceable"] = r.queue_unplaceable;
  out["allocated_gpus_mean"] = OrNull(MeanAllocated(r));
  out["allocated_gpus_over_time"] = AllocatedAtTimeShares(r, 10);
  out["devices_counted_twice"] = r.counted_twice;
  out["placed_by_resource"] = r.placed_by_resource;
  out["rejections"] = r.stranded_at_rejection.size();
  out["stranded_ratio_at_rejection_mean"] = OrNull(Mean(r.stranded_at_rejection));
  return out;
}

json SummaryJson(std::span<const json> runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> by_name;
  for (const json& run : runs) {
    std::string name = run.value("name", "");
    if (by_name[name].empty()) order.push_back(name);
    by_name[name].push_back(&run);
  }
  json out = json::array();
  for (const std::string& name : order) {
    json entry = {{"name", name}, {"runs", by_name[name].size()}};
    for (const char* field : {"unallocated_ratio_at_full_demand", "placed_pods"}) {
      std::vector<double> values;
      for (const json* run : by_name[name]) {
        if ((*run)[field].is_number()) values.push_back((*run)[field].get<double>());
      }
      if (values.empty()) {
        entry[field] = nullptr;
        continue;
      }
      auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      entry[field] = {{"median", *Median(values)}, {"min", *lo}, {"max", *hi}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string RunTable(std::span<const json> runs) {
  std::string out =
      fmt::format("{:<28} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9}\n", "RUN",
                  "SEED", "PLACED", "PENDING", "GPUS", "UNALLOC", "FALLBACK", "SHARED",
                  "PREF-HON", "WAIT-P99", "STRANDED");
  for (const json& r : runs) {
    out += fmt::format(
        "{:<28} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9}\n",
        r.value("name", ""),
        r.contains("seed") ? std::to_string(r["seed"].get<uint64_t>()) : "-",
        r.value("placed_pods", 0), r.value("pending_pods", 0),
        fmt::format("{:.1f}/{:.0f}", r.value("allocated_gpus", 0.0), r.value("capacity_gpus", 0.0)),
        Cell(r["unallocated_ratio_at_full_demand"], "{:.2f}%", 100), r.value("fallbacks", 0),
        r.value("sharing_conversions", 0),
        Cell(r["preferred_affinity_honoured_ratio"], "{:.0f}%", 100),
        Cell(r["wait_seconds_p99"], "{:.2f}s"),
        Cell(r.value("stranded_ratio_at_rejection_mean", json()), "{:.2f}%", 100));
  }
  json summary = SummaryJson(runs);
  bool repeated = std::any_of(summary.begin(), summary.end(),
                              [](const json& s) { return s["runs"].get<size_t>() > 1; });
  if (!repeated) return out;
  out += fmt::format("\n{:<28} {:>5} {:>28} {:>24}\n", "NAME", "RUNS",
                     "UNALLOC AT 100% (MED MIN-MAX)", "PLACED (MED MIN-MAX)");
  for (const json& s : summary) {
    const json& u = s["unallocated_ratio_at_full_demand"];
    const json& p = s["placed_pods"];
    out += fmt::format(
        "{:<28} {:>5} {:>28} {:>24}\n", s["name"].get<std::string>(), s["runs"].get<size_t>(),
        u.is_object() ? fmt::format("{:.2f}% {:.2f}-{:.2f}%", u["median"].get<double>() * 100,
                                    u["min"].get<double>() * 100, u["max"].get<double>() * 100)
                      : "-",
        p.is_object() ? fmt::format("{:.0f} {:.0f}-{:.0f}", p["median"].get<double>(),
                                    p["min"].get<double>(), p["max"].get<double>())
                      : "-");
  }
  return out;
}

CurveSeries CurveOf(const std::string& name, const ReplayResult& result) {
  CurveSeries series{name};
  if (result.capacity_gpus <= 0) return series;
  for (const CurveSample& s : result.curve) {
    series.points.push_back({100 * s.demand_gpus / result.capacity_gpus,
                             100 * (1 - s.allocated_gpus / result.capacity_gpus)});
  }
  if (auto u = UnallocatedAtFullDemand(result)) series.y_at_100 = 100 * *u;
  return series;
}

}  // namespace gpuadmit
