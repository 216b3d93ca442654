// The offline oracle for streams of single-device MIG pods: the most pods any placement could
// run knowing the whole stream in advance. Pods and MIG instances form a bipartite graph, an edge
// wherever the pod may run on the node (CanRunOn: readiness, taints, nodeSelector, required
// affinity) and the instance's profile is the one it asks for or one the fallback chain allows
// (every smaller profile of its product: the built-in chain); the answer is a maximum matching,
// found as a maximum flow. CPU, memory and the pod count per node are left out, so the figure is
// an upper bound, and so are departures: the oracle is meant for streams where pods stay.
//
// Pods with identical edge sets are one class (a flow of their count), so a stream of 100,000
// pods on a few hundred kinds of node is a graph of a few thousand vertices.
//
//   OracleResult o = MigOracle(cluster, arrivals);
//   if (o.applies) std::cout << o.placeable << " of " << o.pods;
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "core/sim/replay.h"

namespace gpuadmit {

struct OracleResult {
  bool applies = false;  // every GPU pod of the stream asks for exactly one MIG instance
  int pods = 0;          // the stream's GPU pods
  int placeable = 0;     // the most that can run at once
};

// `cluster`: a v1 List of Nodes (and bound Pods, whose instances are taken). Pods without a GPU
// ask are left out; a pod asking anything but one MIG instance makes the oracle not apply.
OracleResult MigOracle(const nlohmann::json& cluster, std::span<const Arrival> arrivals);

}  // namespace gpuadmit
