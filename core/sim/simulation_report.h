// What `gpuadmit simulate` reports of its runs: each run's figures as JSON (the fields
// docs/decision-quality.md defines), the text table, and the fragmentation curve.
//
//   nlohmann::json run = RunJson("baseline", result, seed);
//   std::cout << RunTable({runs.begin(), runs.end()});
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sim/curve_chart.h"
#include "core/sim/replay.h"

namespace gpuadmit {

// The value below which `p` (0-1) of `values` lie, nearest rank; nullopt when empty.
std::optional<double> Percentile(std::vector<double> values, double p);

// The middle of `values`, the mean of the two middle ones when their count is even (as Python's
// statistics.median, which the benchmarks use); nullopt when empty.
std::optional<double> Median(std::vector<double> values);

// The arithmetic mean of `values`; nullopt when empty.
std::optional<double> Mean(const std::vector<double>& values);

// GPUs held by bound pods, averaged over the arrivals' time: each arrival's sample weighted by
// the time to the next arrival, from the first to the last (the end-of-replay sample is left
// out). nullopt when the arrivals span no time.
std::optional<double> MeanAllocated(const ReplayResult& result);

// GPUs held by bound pods at `points` + 1 evenly spaced times from the first arrival to the last
// (the sample in force at each): the allocation over time, as a row of a table.
std::vector<double> AllocatedAtTimeShares(const ReplayResult& result, int points);

// 1 - allocated/capacity at the first sample where the arrived demand reached the capacity;
// nullopt when it never did (or the cluster has no GPU).
std::optional<double> UnallocatedAtFullDemand(const ReplayResult& result);

// One run: {"name", "seed" (when given), "arrived_pods", "placed_pods", "pending_pods",
// "gpu_pods_placed", "gpu_pods_pending", "capacity_gpus", "shared_gpus" (of the capacity,
// time-sliced GPUs), "allocated_gpus", "demand_gpus",
// "unallocated_ratio_at_full_demand", "fallbacks", "sharing_conversions",
// "preferred_affinity_honoured_ratio", "wait_seconds_p50", "wait_seconds_p99",
// "wait_seconds_mean", "multi_gpu_wait_seconds_mean" and "_p99" (pods asking more than one
// GPU), "queued_pods", "queue_timeouts", "queue_unplaceable",
// "allocated_gpus_mean", "allocated_gpus_over_time" (eleven points, 0% to 100% of the time
// span), "devices_counted_twice", "placed_by_resource"}; ratios 0-1, null where there is nothing to
// divide by.
nlohmann::json RunJson(const std::string& name, const ReplayResult& result,
                       std::optional<uint64_t> seed);

// Runs that share a name (one per seed), summarised: {"name", "runs", and for
// unallocated_ratio_at_full_demand and placed_pods: "median", "min", "max"}, in first-seen order.
nlohmann::json SummaryJson(std::span<const nlohmann::json> runs);

// A table, one line per run (or per name with its median and range when runs repeat a name).
std::string RunTable(std::span<const nlohmann::json> runs);

// The run's curve for CurveChartSvg: x arrived demand and y unallocated capacity, both % of
// capacity.
CurveSeries CurveOf(const std::string& name, const ReplayResult& result);

}  // namespace gpuadmit
