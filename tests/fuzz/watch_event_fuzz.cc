// libFuzzer target: the watch-event decoder as the inventory runs it: a line of a watch stream
// parsed through the Pod (first byte even) or Node (odd) field trie, read into a record, and
// applied to a cluster state that is then published as a snapshot.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/inventory/cluster_state.h"
#include "core/json/json_fields.h"
#include "core/json/json_trie_reader.h"
#include "core/kube/kube_objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  bool pods = data[0] % 2 == 0;
  std::string_view line(reinterpret_cast<const char*>(data + 1), size - 1);
  auto event = gpuadmit::ParseJsonKeeping(
      line, pods ? gpuadmit::PodEventFields() : gpuadmit::NodeEventFields(), 512);
  if (!event.ok() || !event.value().is_object()) return 0;
  const nlohmann::json& doc = event.value();
  std::string type = gpuadmit::StringAt(doc, {"type"});
  auto object = doc.find("object");
  if (object == doc.end() || !object->is_object()) return 0;

  gpuadmit::ClusterState state("gpuadmit.io/reservation");
  if (pods) {
    if (type == "DELETED") {
      state.DeletePod(gpuadmit::ObjectKey(*object));
    } else {
      state.UpsertPod(gpuadmit::ReadPod(*object, state.reservation_annotation()));
    }
  } else if (type == "DELETED") {
    state.DeleteNode(gpuadmit::ReadNode(*object).name);
  } else {
    state.UpsertNode(gpuadmit::ReadNode(*object));
  }
  gpuadmit::InventorySnapshot snapshot = state.Snapshot(1);
  for (const gpuadmit::NodeInventory& node : snapshot.nodes()) {
    for (const auto& [resource, count] : node.facts->allocatable) (void)node.Free(resource);
  }
  return 0;
}
