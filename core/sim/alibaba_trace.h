// The Alibaba GPU cluster trace v2023 ("openb", alibaba/clusterdata, cluster-trace-gpu-v2023)
// as `gpuadmit simulate --trace alibaba-openb` replays it: the node list becomes a v1 List of
// Nodes, the pod list an arrival stream in the FGD paper's order (USENIX ATC 2023: shuffled by
// a seed, inflated by drawing pods again until the arrived GPU ask reaches a share of capacity,
// one pod at a time, none leaving).
//
// The mapping onto gpuadmit's resource model (TraceMapping; docs/decision-quality.md):
//   node    sn -> metadata.name and kubernetes.io/hostname; cpu_milli, memory_mib -> allocatable
//           cpu and memory; pods: `max_pods` (kubelet's default 110); model -> the
//           nvidia.com/gpu.product label through `products` (unknown models keep their name).
//           A whole-GPU node offers nvidia.com/gpu = gpu. The first `shared_fraction` of each
//           model's nodes (by name) are time-sliced instead: nvidia.com/gpu.shared = gpu x
//           `shared_replicas`, labelled nvidia.com/gpu.sharing-strategy=time-slicing and
//           nvidia.com/gpu.replicas, as the NVIDIA device plugin with renameByDefault does.
//   pod     cpu_milli, memory_mib -> requests; num_gpu -> nvidia.com/gpu limits, a fractional
//           gpu_milli (< 1000, one GPU) too: Kubernetes has no fraction of a GPU, so without
//           gpuadmit the pod takes a whole one. gpu_milli is kept as the annotation
//           gpuadmit.io/gpu-milli; qos LS -> workload-type inference, BE -> batch, others none
//           (the label gpuadmit.io/workload-type, which the sharing flow reads).
//           gpu_spec "A|B" -> a required node affinity `nvidia.com/gpu.product In [A', B']`.
//   demand  a pod's GPU ask as created, in GPUs: num_gpu (a fractional pod asks one).
//
//   auto nodes = ReadTraceNodes(node_csv);  auto pods = ReadTracePods(pod_csv);
//   nlohmann::json cluster = TraceCluster(nodes.value(), mapping);
//   std::vector<Arrival> stream = TraceArrivals(pods.value(), mapping, seed, capacity_gpus);
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/sim/replay.h"

namespace gpuadmit {

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t gpus = 0;
  std::string model;  // T4, P100, V100M16, V100M32, A10, G1, G2, G3
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t gpus = 0;       // num_gpu
  int64_t gpu_milli = 0;  // thousandths of each GPU it asks
  std::string gpu_spec;   // allowed models, "|"-separated; "" for any
  std::string qos;        // LS, BE, Burstable, Guaranteed
  // Seconds from the trace's start, when the list has the column and the cell is not empty.
  std::optional<int64_t> creation_time;
  std::optional<int64_t> scheduled_time;  // when Alibaba's scheduler bound it
  std::optional<int64_t> deletion_time;
};

struct TraceMapping {
  // Trace model -> nvidia.com/gpu.product, as GPU feature discovery names the product.
  std::map<std::string, std::string, std::less<>> products = {{"A10", "NVIDIA-A10"},
                                                              {"P100", "Tesla-P100-PCIE-16GB"},
                                                              {"T4", "Tesla-T4"},
                                                              {"V100M16", "Tesla-V100-SXM2-16GB"},
                                                              {"V100M32", "Tesla-V100-SXM2-32GB"}};
  int64_t max_pods = 110;        // kubelet's --max-pods default
  double shared_fraction = 0;    // of each model's GPU nodes, time-sliced
  int64_t shared_replicas = 4;   // replicas per time-sliced GPU
  double inflate_to = 1.3;       // arrived GPU ask as a share of capacity (FGD: 130%)
  double spacing_seconds = 1.0;  // between arrivals: each pod is bound before the next
};

// Rows of openb_node_list_gpu_node.csv (header `sn,cpu_milli,memory_mib,gpu,model`). Errors name
// the line and the column that is missing or not a number.
Result<std::vector<TraceNode>> ReadTraceNodes(std::string_view csv);

// Rows of an openb_pod_list_*.csv. The columns are found by the header's names; name, cpu_milli,
// memory_mib, num_gpu and gpu_milli are required, gpu_spec and qos optional (multigpu20 has
// only the first five).
Result<std::vector<TracePod>> ReadTracePods(std::string_view csv);

// The nodes as a v1 List of Nodes under `mapping`.
nlohmann::json TraceCluster(const std::vector<TraceNode>& nodes, const TraceMapping& mapping);

// A trace pod as the v1 Pod its owner would create without gpuadmit, named `name`.
nlohmann::json TracePodObject(const TracePod& pod, const std::string& name,
                              const TraceMapping& mapping);

// The pod's GPU ask as created, in GPUs.
int64_t TraceDemandGpus(const TracePod& pod);

// The FGD replay order: `pods` shuffled by `seed` (Fisher-Yates over a 64-bit Mersenne Twister,
// so a seed gives the same order on every machine), then pods drawn again uniformly until the
// arrived GPU ask is mapping.inflate_to x `capacity_gpus`; one every mapping.spacing_seconds,
// none leaving. Drawn pods get a "-r<N>" suffix so names stay unique.
std::vector<Arrival> TraceArrivals(const std::vector<TracePod>& pods, const TraceMapping& mapping,
                                   uint64_t seed, double capacity_gpus);

// The trace in its own time (for the capacity queue), not the FGD order: every pod with a
// creation_time arrives at creation_time / `speedup` and, once bound, runs deletion_time minus
// scheduled_time (creation_time when it has none) seconds, the time it ran in Alibaba's cluster;
// no deletion_time: it stays. Sorted by arrival, ties in list order. `speedup` > 1 compresses
// the arrivals but not the run times, so more pods overlap: the trace's own peak is 71 GPUs of
// 6,212 (docs/decision-quality.md, "Waiting for GPUs").
std::vector<Arrival> TraceArrivalsTimed(const std::vector<TracePod>& pods,
                                        const TraceMapping& mapping, double speedup);

}  // namespace gpuadmit
