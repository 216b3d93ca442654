#include "core/report/report_render.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpuadmit {
namespace {

using nlohmann::json;

// "8", or "0.86" for a fraction of GPUs (MIG slices, shared replicas).
std::string Gpus(double gpus) {
  double whole = std::round(gpus);
  if (std::abs(gpus - whole) < 1e-9) return fmt::format("{}", static_cast<int64_t>(whole));
  return fmt::format("{:.2f}", gpus);
}

// "1 node", "2 nodes".
std::string Count(size_t n, std::string_view thing) {
  return fmt::format("{} {}{}", n, thing, n == 1 ? "" : "s");
}

// "1 GPU", "8 GPUs", "0.86 GPUs".
std::string GpuCount(double gpus) {
  std::string n = Gpus(gpus);
  return n + (n == "1" ? " GPU" : " GPUs");
}

double Rounded(double v) { return std::round(v * 100) / 100; }

json Rounded(const std::optional<double>& v) { return v ? json(Rounded(*v)) : json(); }

void ConsolidationText(const Consolidation& c, std::string& out) {
  if (c.pods_packed == 0 && c.pods_pinned == 0) {
    fmt::format_to(std::back_inserter(out),
                   "Consolidation opportunities found: none, no GPU pods on the {} analysed "
                   "({})\n",
                   Count(c.gpu_nodes, "GPU node"), GpuCount(c.capacity_gpus));
    return;
  }
  fmt::format_to(std::back_inserter(out),
                 "Consolidation opportunities found: underutilizedNodes={}, potentialSavings={}\n",
                 c.underused.size(), GpuCount(c.potential_savings_gpus));
  fmt::format_to(std::back_inserter(out),
                 "GPU nodes analysed: {} ({}, {} allocated); {} on {}, on {} after repacking\n",
                 c.gpu_nodes, GpuCount(c.capacity_gpus), Gpus(c.allocated_gpus),
                 Count(c.pods_packed, "GPU pod"), Count(c.nodes_in_use, "node"),
                 c.nodes_in_use_after);
  if (!c.underused.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "Underutilized: under {:g}% of a node's GPUs allocated, or under {:g}% GPU "
                   "utilisation measured over the metrics window\n",
                   c.rule.underused_allocation_percent, c.rule.underused_utilization_percent);
  }
  for (const UnderusedNode& u : c.underused) {
    std::string measured;
    if (u.utilization_percent) {
      measured = fmt::format(", {:.1f}% measured utilisation", *u.utilization_percent);
    }
    fmt::format_to(std::back_inserter(out),
                   "Recommendation: Node {} is underutilized ({:.1f}% used, {}/{} GPUs "
                   "allocated{})\n",
                   u.node, u.allocated_percent, Gpus(u.allocated_gpus), Gpus(u.capacity_gpus),
                   measured);
  }
  for (const PodMove& m : c.moves) {
    fmt::format_to(std::back_inserter(out), "Move: pod {} from {} to {} ({})\n", m.pod, m.from,
                   m.to, GpuCount(m.gpus));
  }
  for (const std::string& node : c.freed_nodes) {
    fmt::format_to(std::back_inserter(out), "Freed: node {} holds no GPU pod after repacking\n",
                   node);
  }
  for (const std::string& pod : c.unplaceable) {
    fmt::format_to(std::back_inserter(out),
                   "Unplaceable: pod {} fits on no node during repacking; left where it is\n", pod);
  }
}

void MigText(const Report& r, std::string& out) {
  if (!r.has_mig_counters) {
    out += "MIG layout pressure: no gpuadmit counters given (--gpuadmit-metrics)\n";
    return;
  }
  if (r.mig_pressure.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "MIG layout pressure: no profile fell back or ran out (exhausted {})\n",
                   r.mig_exhausted_total);
    return;
  }
  for (const MigProfilePressure& p : r.mig_pressure) {
    std::string given;
    for (const auto& [profile, count] : p.given) {
      given += fmt::format("{}{} {}", given.empty() ? "" : ", ", profile, count);
    }
    std::string exhausted =
        p.exhausted ? fmt::format("; ran out with none smaller free {} times", *p.exhausted) : "";
    std::string advice = p.fallbacks > 0 ? fmt::format(
                                               ": give the mig-parted layout more {} "
                                               "instances",
                                               p.profile)
                                         : "";
    fmt::format_to(std::back_inserter(out),
                   "MIG profile {} ran out {} times while a smaller profile was free ({:.1f}% of "
                   "fallbacks; given {}){}; {}/{} free now{}\n",
                   p.profile, p.fallbacks, p.share_percent, given.empty() ? "-" : given, exhausted,
                   p.free_now, p.allocatable_now, advice);
  }
  if (r.mig_exhausted_total > 0) {
    fmt::format_to(std::back_inserter(out),
                   "MIG: {} pods found neither their profile nor a smaller one free (more MIG "
                   "capacity, not another layout)\n",
                   r.mig_exhausted_total);
  }
}

void TimeSlicingText(const Report& r, std::string& out) {
  if (!r.has_metrics) {
    out += "Time-slicing: no GPU metrics given (--dcgm-file or --prometheus)\n";
    return;
  }
  if (r.time_slicing.empty()) {
    out += "Time-slicing: the metrics hold no whole GPU\n";
    return;
  }
  for (const TimeSlicingAdvice& a : r.time_slicing) {
    std::string model = a.model.empty() ? "" : fmt::format(" ({})", a.model);
    if (!a.recommended_replicas) {
      fmt::format_to(std::back_inserter(out), "Time-slicing: {} GPU {}{}: no utilisation data\n",
                     a.node, a.gpu, model);
      continue;
    }
    std::string bursty = a.burstiness_percent ? fmt::format("{:.1f}% bursty", *a.burstiness_percent)
                                              : std::string("burstiness unknown (one point)");
    fmt::format_to(std::back_inserter(out),
                   "Time-slicing: {} GPU {}{}: {:.1f}% mean utilisation over {} points, {} -> {} "
                   "replicas ({}; now {})\n",
                   a.node, a.gpu, model, *a.mean_utilization_percent, a.points, bursty,
                   *a.recommended_replicas, a.rule, a.current_replicas);
  }
}

json ConsolidationJson(const Consolidation& c) {
  json underused = json::array();
  for (const UnderusedNode& u : c.underused) {
    underused.push_back({{"node", u.node},
                         {"capacityGpus", Rounded(u.capacity_gpus)},
                         {"allocatedGpus", Rounded(u.allocated_gpus)},
                         {"allocatedPercent", Rounded(u.allocated_percent)},
                         {"utilizationPercent", Rounded(u.utilization_percent)},
                         {"byAllocation", u.by_allocation},
                         {"byUtilization", u.by_utilization}});
  }
  json moves = json::array();
  for (const PodMove& m : c.moves) {
    moves.push_back({{"pod", m.pod}, {"from", m.from}, {"to", m.to}, {"gpus", Rounded(m.gpus)}});
  }
  return {{"gpuNodes", c.gpu_nodes},
          {"capacityGpus", Rounded(c.capacity_gpus)},
          {"allocatedGpus", Rounded(c.allocated_gpus)},
          {"underutilizedNodes", c.underused.size()},
          {"potentialSavingsGpus", Rounded(c.potential_savings_gpus)},
          {"podsPacked", c.pods_packed},
          {"podsPinned", c.pods_pinned},
          {"nodesInUse", c.nodes_in_use},
          {"nodesInUseAfter", c.nodes_in_use_after},
          {"underused", std::move(underused)},
          {"freedNodes", c.freed_nodes},
          {"moves", std::move(moves)},
          {"unplaceablePods", c.unplaceable}};
}

json MigJson(const Report& r) {
  if (!r.has_mig_counters) return json();
  json profiles = json::array();
  for (const MigProfilePressure& p : r.mig_pressure) {
    json given = json::array();
    for (const auto& [profile, count] : p.given) {
      given.push_back({{"profile", profile}, {"count", count}});
    }
    profiles.push_back({{"profile", p.profile},
                        {"fallbacks", p.fallbacks},
                        {"sharePercent", Rounded(p.share_percent)},
                        {"given", std::move(given)},
                        {"exhausted", p.exhausted ? json(*p.exhausted) : json()},
                        {"allocatableNow", p.allocatable_now},
                        {"freeNow", p.free_now}});
  }
  return {{"exhaustedTotal", r.mig_exhausted_total}, {"profiles", std::move(profiles)}};
}

json TimeSlicingJson(const Report& r) {
  if (!r.has_metrics) return json();
  json gpus = json::array();
  for (const TimeSlicingAdvice& a : r.time_slicing) {
    gpus.push_back(
        {{"node", a.node},
         {"gpu", a.gpu},
         {"uuid", a.uuid},
         {"model", a.model},
         {"points", a.points},
         {"meanUtilizationPercent", Rounded(a.mean_utilization_percent)},
         {"maxUtilizationPercent", Rounded(a.max_utilization_percent)},
         {"burstinessPercent", Rounded(a.burstiness_percent)},
         {"currentReplicas", a.current_replicas},
         {"shared", a.shared},
         {"recommendedReplicas", a.recommended_replicas ? json(*a.recommended_replicas) : json()},
         {"rule", std::string(a.rule)}});
  }
  return {{"windowPoints", r.window_points}, {"gpus", std::move(gpus)}};
}

}  // namespace

std::string ReportText(const Report& report) {
  std::string out;
  ConsolidationText(report.consolidation, out);
  MigText(report, out);
  TimeSlicingText(report, out);
  return out;
}

std::string ReportJson(const Report& report) {
  const ConsolidationOptions& thresholds = report.options.consolidation;
  json doc = {
      {"thresholds",
       {{"underusedAllocationPercent", thresholds.underused_allocation_percent},
        {"underusedUtilizationPercent", thresholds.underused_utilization_percent}}},
      {"consolidation", ConsolidationJson(report.consolidation)},
      {"migPressure", MigJson(report)},
      {"timeSlicing", TimeSlicingJson(report)},
  };
  return doc.dump(2) + "\n";
}

}  // namespace gpuadmit
