// A ScaleCluster read into a ClusterState, as the inventory's reflectors would after listing it:
// for the benchmarks that measure what serve does over a 5,000-node snapshot (metrics_bench.cc,
// status_bench.cc) without running the API server and the watch.
//
//   ClusterState state("gpuadmit.io/reservation");
//   LoadScaleCluster(ScaleCluster(5000, 150000), state);
//
// Thread safety: none; `state` is the caller's.
#pragma once

#include <string>

#include "bench/scale/scale_cluster.h"
#include "core/inventory/cluster_state.h"
#include "core/json/json_tape.h"
#include "core/kube/kube_objects.h"

namespace gpuadmit::bench {

inline void LoadScaleCluster(const ScaleCluster& cluster, ClusterState& state) {
  std::string text;
  for (int i = 0; i < cluster.node_count(); ++i) {
    text.clear();
    cluster.AppendNode(text, i);
    state.UpsertNode(ReadNode(JsonTape::Parse(text, 512)->root()));
  }
  for (int j = 0; j < cluster.pod_count(); ++j) {
    text.clear();
    cluster.AppendPod(text, j, cluster.InitialVersion(j));
    state.UpsertPod(ReadPod(JsonTape::Parse(text, 512)->root(), state.reservation_annotation()));
  }
}

}  // namespace gpuadmit::bench
