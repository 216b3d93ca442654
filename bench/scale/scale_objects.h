// The JSON text of generated Kubernetes objects for bench/scale/scale_cluster.h: Nodes as GPU Feature
// Discovery labels them (8 GPUs, whole or cut into MIG profiles in the mixed strategy) with the
// status a kubelet reports, and Pods of about 4.5 KB as the apiserver sends them (managedFields,
// ownerReferences, env, volumes, tolerations, status). Compact, written by appending, so 150,000
// pods cost no DOM. Every detail (names, uids, IPs, times, hashes) is a hash of the object's index
// and a purpose, so an object renders the same in any process and alone.
//
//   std::string text;
//   AppendPod(text, 7, shape, {.node = 3, .restarts = 1, .resource_version = 42}, "node-3", "");
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuadmit::bench {

enum class Layout : uint8_t { kWholeGpu, kMig1g, kMig3g, kMigMixed };
enum class GpuAsk : uint8_t { kNone, kGpu, kMig1g, kMig2g, kMig3g };

struct NodeShape {
  Layout layout = Layout::kWholeGpu;
  bool h100 = true;  // else NVIDIA-A100-SXM4-80GB, which offers the same MIG profiles
  bool cordoned = false;
  bool not_ready = false;
  bool tainted = false;  // dedicated=training:NoSchedule
};

struct PodShape {
  int32_t node = -1;         // -1: pending, not bound
  int32_t wanted_node = -1;  // pending and pinned by a kubernetes.io/hostname nodeSelector
  GpuAsk ask = GpuAsk::kNone;
  uint8_t count = 0;      // of `ask`, in the one container
  bool sentinel = false;  // the pod the watch stream adds last: bench/scale-sentinel
};

// What changes between versions of one pod in the watch stream.
struct PodVersion {
  int32_t node = -1;
  uint16_t restarts = 0;
  uint64_t resource_version = 0;
};

// SplitMix64's finaliser over (index, purpose): the source of every generated detail, so any
// object renders alone, in either process, and comes out the same.
inline uint64_t ScaleHash(uint64_t index, uint64_t purpose) {
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  return mix(mix(index) ^ (purpose << 48));
}

std::string NodeName(int node, const NodeShape& shape);
void AppendNode(std::string& out, int node, const NodeShape& shape);

// `node_name`: the node this version runs on ("" while pending); `wanted_node_name`: the node a
// pending pod's nodeSelector pins it to ("" for none).
void AppendPod(std::string& out, int pod, const PodShape& shape, const PodVersion& version,
               std::string_view node_name, std::string_view wanted_node_name);
// "namespace/name": what the apiserver orders a list by and a continue token names.
std::string PodKey(int pod, const PodShape& shape);

}  // namespace gpuadmit::bench
