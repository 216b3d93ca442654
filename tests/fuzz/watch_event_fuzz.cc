// libFuzzer target: the watch-event decoder as the inventory runs it: a line of a watch stream
// parsed onto simdjson's tape, its object read as a Pod, a Node, a ResourceSlice or a
// ResourceClaim (the first byte modulo 4), and applied to a cluster state that is then published
// as a snapshot (a slice with a Node of its node's name, so its devices are merged in). Differential: JsonView's two
// backends read alike, so the record read off the object copied into nlohmann values is the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/dra/dra_objects.h"
#include "core/inventory/cluster_state.h"
#include "core/json/json_tape.h"
#include "core/kube/kube_objects.h"

namespace {

void SameOrAbort(const gpuadmit::PodRecord& a, const gpuadmit::PodRecord& b) {
  if (a.key != b.key || a.node != b.node || a.wanted_node != b.wanted_node ||
      a.terminal != b.terminal || a.need != b.need || a.reservation != b.reservation ||
      (a.queued == nullptr) != (b.queued == nullptr)) {
    std::abort();
  }
}

void SameOrAbort(const gpuadmit::NodeFacts& a, const gpuadmit::NodeFacts& b) {
  if (a.name != b.name || a.labels != b.labels || a.allocatable != b.allocatable ||
      a.ready != b.ready || a.unschedulable != b.unschedulable ||
      a.taints.size() != b.taints.size()) {
    std::abort();
  }
}

void SameOrAbort(const gpuadmit::ResourceSliceRecord& a, const gpuadmit::ResourceSliceRecord& b) {
  if (a.name != b.name || a.node != b.node || a.pool != b.pool ||
      a.devices.size() != b.devices.size() || a.counters != b.counters) {
    std::abort();
  }
}

void SameOrAbort(const gpuadmit::ResourceClaimRecord& a, const gpuadmit::ResourceClaimRecord& b) {
  if (a.key != b.key || a.allocated != b.allocated || a.owner_pod != b.owner_pod) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int kind = data[0] % 4;  // 0 Pod, 1 Node, 2 ResourceSlice, 3 ResourceClaim
  bool pods = kind == 0;
  std::string_view line(reinterpret_cast<const char*>(data + 1), size - 1);
  auto tape = gpuadmit::JsonTape::Parse(line, gpuadmit::kMaxJsonDepth);
  if (tape == nullptr) return 0;
  auto [type_value, object] = tape->root().Fields({"type", "object"});
  if (!object.is_object()) return 0;
  std::string_view type = type_value.string();
  const nlohmann::json dom_object = object.ToJson();

  gpuadmit::ClusterState state("gpuadmit.io/reservation");
  if (kind == 2) {
    gpuadmit::ResourceSliceRecord slice = gpuadmit::ReadResourceSlice(object);
    SameOrAbort(slice, gpuadmit::ReadResourceSlice(dom_object));
    gpuadmit::NodeFacts node;
    node.name = slice.node;
    node.ready = true;
    state.UpsertNode(std::move(node));
    state.EditDra([&](gpuadmit::DraDevices& d) { d.UpsertSlice(std::move(slice)); });
  } else if (kind == 3) {
    gpuadmit::ResourceClaimRecord claim = gpuadmit::ReadResourceClaim(object);
    SameOrAbort(claim, gpuadmit::ReadResourceClaim(dom_object));
    state.UpsertClaim(std::move(claim));
  } else if (pods) {
    if (type == "DELETED") {
      state.DeletePod(gpuadmit::ObjectKey(object));
    } else {
      gpuadmit::PodRecord pod = gpuadmit::ReadPod(object, state.reservation_annotation());
      SameOrAbort(pod, gpuadmit::ReadPod(dom_object, state.reservation_annotation()));
      state.UpsertPod(std::move(pod));
    }
  } else {
    gpuadmit::NodeFacts node = gpuadmit::ReadNode(object);
    SameOrAbort(node, gpuadmit::ReadNode(dom_object));
    if (type == "DELETED") {
      state.DeleteNode(node.name);
    } else {
      state.UpsertNode(std::move(node));
    }
  }
  gpuadmit::InventorySnapshot snapshot = state.Snapshot(1);
  for (const gpuadmit::NodeInventory& node : snapshot.nodes()) {
    for (const auto& [resource, count] : node.facts->allocatable) (void)node.Free(resource);
  }
  return 0;
}
