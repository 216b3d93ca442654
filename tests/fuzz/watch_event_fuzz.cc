// libFuzzer target: the watch-event decoder as the inventory runs it: a line of a watch stream
// parsed onto simdjson's tape, its object read as a Pod (first byte even) or a Node (odd), and
// applied to a cluster state that is then published as a snapshot. Differential: JsonView's two
// backends read alike, so the record read off the object copied into nlohmann values is the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool pods = data[0] % 2 == 0;
  std::string_view line(reinterpret_cast<const char*>(data + 1), size - 1);
  auto tape = gpuadmit::JsonTape::Parse(line, gpuadmit::kMaxJsonDepth);
  if (tape == nullptr) return 0;
  auto [type_value, object] = tape->root().Fields({"type", "object"});
  if (!object.is_object()) return 0;
  std::string_view type = type_value.string();
  const nlohmann::json dom_object = object.ToJson();

  gpuadmit::ClusterState state("gpuadmit.io/reservation");
  if (pods) {
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
