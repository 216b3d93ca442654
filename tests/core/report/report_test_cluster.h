// Hand-built nodes, pods and metrics for the core/report tests: small enough that every answer
// can be worked out on paper (each test says how).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/inventory/gpu_metrics.h"
#include "core/kube/kube_objects.h"
#include "core/report/report_pod.h"

namespace gpuadmit::report_test {

inline NodeFacts GpuNode(std::string name, int64_t gpus, std::string product = "NVIDIA-A100") {
  NodeFacts n;
  n.name = std::move(name);
  n.ready = true;
  n.allocatable["nvidia.com/gpu"] = gpus;
  n.compute = {64'000, 512LL << 30};
  n.product = product;
  n.gpu.product = product;
  n.labels["nvidia.com/gpu.product"] = product;
  n.labels["kubernetes.io/hostname"] = n.name;
  return n;
}

// A pod bound to `node` asking for `gpus` whole GPUs, 1 CPU and 1 GiB, with no constraints.
inline ReportPod GpuPod(std::string key, std::string node, int64_t gpus) {
  ReportPod p;
  p.key = std::move(key);
  p.node = std::move(node);
  if (gpus > 0) p.need["nvidia.com/gpu"] = gpus;
  p.compute = {1000, 1LL << 30};
  p.constraints = SchedulingConstraints{};
  return p;
}

// Metrics whose window holds, per (node, gpu), the given utilisation points, 15 s apart.
inline std::shared_ptr<const ClusterGpuMetrics> MetricsOf(
    const std::map<std::pair<std::string, int>, std::vector<double>>& points) {
  GpuMetricsHistory history({.span = std::chrono::hours(1), .max_points = 1000});
  size_t readings = 0;
  for (const auto& [device, values] : points) readings = std::max(readings, values.size());
  const MetricsTime t0{};
  for (size_t i = 0; i < readings; ++i) {
    GpuReading reading;
    for (const auto& [device, values] : points) {
      if (i >= values.size()) continue;
      GpuSample s;
      s.node = device.first;
      s.gpu = device.second;
      s.model_name = "NVIDIA A100-SXM4-40GB";
      s.utilization_percent = values[i];
      reading.gpus.push_back(s);
    }
    history.Add(reading, t0 + std::chrono::seconds(15) * static_cast<int>(i));
  }
  return std::make_shared<const ClusterGpuMetrics>(history.Publish());
}

}  // namespace gpuadmit::report_test
