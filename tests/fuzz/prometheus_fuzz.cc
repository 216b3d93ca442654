// libFuzzer target: what gpuadmit reads from Prometheus and DCGM exporters: an instant-query
// answer (JSON) and exposition text, then the GPU readings and the metrics history built on them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/inventory/gpu_metrics.h"
#include "core/inventory/prometheus_samples.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuadmit::GpuMetricsHistory history;
  gpuadmit::MetricsTime t0{};
  if (auto samples = gpuadmit::ParseInstantQueryAnswer(text); samples.ok()) {
    history.Add(gpuadmit::GpuReadingFromSamples(samples.value()), t0);
  }
  history.Add(gpuadmit::GpuReadingFromExposition(text), t0 + std::chrono::seconds(15));
  gpuadmit::ClusterGpuMetrics metrics = history.Publish();
  for (const gpuadmit::NodeGpuMetrics& node : metrics.nodes()) {
    (void)gpuadmit::IdleGpuCount(&node, 8);
    (void)node.MeanUtilizationPercent();
  }
  return 0;
}
