// ScaleCluster: a generated cluster at the largest size Kubernetes supports (5,000 nodes of 8 GPUs,
// 150,000 pods), for bench/scale/inventory_scale.cc. Every object is rendered straight to the compact
// JSON text an apiserver sends (Nodes labelled as GPU Feature Discovery labels them, Pods of about
// 4.5 KB with managedFields, ownerReferences, env, volumes and status), from a plan that is a pure
// function of the sizes. So the API server process and the measuring process render the same
// objects without exchanging them, and no nlohmann DOM is built for 150,000 pods.
//
//   ScaleCluster cluster(5000, 150000);
//   ListPages pods = cluster.PodListPages(500);  // what GET /api/v1/pods?limit=500 pages through
//   std::string pod;
//   cluster.AppendPod(pod, 7, cluster.InitialVersion(7));
//
// The plan: 60% whole-GPU nodes (nvidia.com/gpu: 8; H100 and A100 80GB), 40% MIG nodes in the
// mixed strategy (8 x 7 1g.10gb; 8 x 2 3g.40gb; 8 x (3g.40gb + 2g.20gb + 2 1g.10gb)); a few
// cordoned, NotReady or tainted nodes; 3% of pods pending; bound pods' GPU asks fit their node,
// and every 2g.20gb in the cluster is taken (so a 2g.20gb ask needs the fallback walk).
//
// Thread safety: immutable after construction; every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/scale/scale_objects.h"

namespace gpuadmit::bench {

struct ListPages {
  std::vector<std::string> bodies;
  std::vector<std::string> continue_tokens;  // of each body; "" on the last
};

class ScaleCluster {
 public:
  // The lists' resourceVersion: every object's own is below it (nodes 50,000 + i, pods
  // 100,000 + j), every watch event's above it (1,000,001 on).
  static constexpr uint64_t kResourceVersionBase = 1000000;

  ScaleCluster(int nodes, int pods);

  int node_count() const { return static_cast<int>(nodes_.size()); }
  // Pods in the lists; pods() has one more, the sentinel the watch stream adds last.
  int pod_count() const { return static_cast<int>(pods_.size()) - 1; }
  const std::vector<NodeShape>& nodes() const { return nodes_; }
  const std::vector<PodShape>& pods() const { return pods_; }
  uint64_t list_resource_version() const;

  std::string NodeName(int node) const;
  void AppendNode(std::string& out, int node) const;
  PodVersion InitialVersion(int pod) const;
  void AppendPod(std::string& out, int pod, const PodVersion& version) const;

  ListPages NodeListPages(int page_size) const;
  ListPages PodListPages(int page_size) const;
  // The pods watch stream: `count` events, cut at line ends into blocks of about `block_bytes`.
  // Mostly MODIFIED status changes (restarts, readiness), one in five a GPU pod moving to another
  // node while a pod with the same ask moves the other way (so the used counts end where they
  // began), and last an ADDED sentinel pod, CPU only.
  std::vector<std::string> WatchBlocks(int count, size_t block_bytes) const;

 private:
  void PlanPods(int pods);

  std::vector<NodeShape> nodes_;
  std::vector<PodShape> pods_;
};

}  // namespace gpuadmit::bench
