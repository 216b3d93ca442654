#include "core/inventory/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/json/json_tape.h"
#include "core/json/yaml_json.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char k2g[] = "nvidia.com/mig-2g.20gb";
constexpr char kGate[] = "gpuadmit.io/capacity";

// Queued facts of an unbound pod created at `created` and held back by `gates`.
std::shared_ptr<const QueuedFacts> Gated(std::vector<std::string> gates, std::string created = "") {
  return std::make_shared<QueuedFacts>(
      QueuedFacts{.created = std::move(created), .scheduling_gates = std::move(gates)});
}

PodRecord Pod(std::string key, std::string node, int64_t count, bool terminal = false) {
  PodRecord p;
  p.key = std::move(key);
  p.node = std::move(node);
  p.need[k2g] = count;
  p.terminal = terminal;
  return p;
}

NodeFacts Node(std::string name, int64_t allocatable) {
  NodeFacts n;
  n.name = std::move(name);
  n.ready = true;
  n.allocatable[k2g] = allocatable;
  return n;
}

TEST(ClusterState, PodsMoveTheirUsageAsTheyChangeAndGo) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", 4));
  state.UpsertNode(Node("n2", 4));
  state.UpsertPod(Pod("ns/a", "", 1));  // queued
  EXPECT_EQ(Get(state.Snapshot(1).queued(), k2g), 1);
  state.UpsertPod(Pod("ns/a", "n1", 1));  // bound
  state.UpsertPod(Pod("ns/b", "n1", 2));
  InventorySnapshot s = state.Snapshot(2);
  EXPECT_EQ(s.FindNode("n1")->Free(k2g), 1);
  EXPECT_TRUE(s.queued().empty());
  state.UpsertPod(Pod("ns/b", "n1", 2, /*terminal=*/true));  // Succeeded frees its devices
  state.DeletePod("ns/a");
  EXPECT_EQ(state.Snapshot(3).FindNode("n1")->Free(k2g), 4);
}

TEST(ClusterState, NodesAndPodsAreCopiedInNameOrder) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n2", 4));
  state.UpsertNode(Node("n1", 2));
  state.UpsertPod(Pod("ns/b", "n1", 1));
  state.UpsertPod(Pod("ns/a", "", 2));
  state.DeleteNode("n2");
  std::vector<NodeFacts> nodes = state.Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(Get(nodes[0].allocatable, k2g), 2);
  std::vector<PodRecord> pods = state.Pods();
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].key, "ns/a");
  EXPECT_EQ(pods[1].key, "ns/b");
  EXPECT_EQ(pods[1].node, "n1");
}

TEST(ClusterState, BoundPodsCountTheirCpuAndMemoryGpuOrNot) {
  ClusterState state("gpuadmit.io/reservation");
  NodeFacts n = Node("n1", 4);
  n.compute = {8000, 16LL << 30};
  state.UpsertNode(n);
  PodRecord gpu = Pod("ns/gpu", "n1", 1);
  gpu.compute = {2000, 4LL << 30};
  PodRecord cpu_only;
  cpu_only.key = "ns/web";
  cpu_only.node = "n1";
  cpu_only.compute = {3000, 1LL << 30};
  PodRecord queued = Pod("ns/queued", "", 1);
  queued.compute = {8000, 0};  // not bound: holds no cpu
  for (const PodRecord& p : {gpu, cpu_only, queued}) state.UpsertPod(p);
  InventorySnapshot snapshot = state.Snapshot(1);
  const NodeInventory* node = snapshot.FindNode("n1");
  EXPECT_EQ(node->compute_used, (ComputeRequest{5000, 5LL << 30}));
  EXPECT_EQ(node->ComputeFree(), (ComputeRequest{3000, 11LL << 30}));
  EXPECT_TRUE(node->FitsCompute({3000, 11LL << 30}));
  EXPECT_FALSE(node->FitsCompute({3001, 0}));
  state.DeletePod("ns/web");
  EXPECT_EQ(state.Snapshot(2).FindNode("n1")->compute_used, (ComputeRequest{2000, 4LL << 30}));
}

TEST(ClusterState, APodPinnedToANodeHoldsItsCpuThereBeforeItIsBound) {
  // A required pin leaves the pod nowhere else to go: until the scheduler binds it, its cpu and
  // memory count on the node it names, GPU pod or not, unless the scheduler found no room.
  ClusterState state("gpuadmit.io/reservation");
  NodeFacts n = Node("n1", 4);
  n.compute = {8000, 16LL << 30};
  state.UpsertNode(n);
  PodRecord pinned;
  pinned.key = "ns/web";
  pinned.wanted_node = "n1";
  pinned.compute = {3000, 1LL << 30};
  state.UpsertPod(pinned);
  InventorySnapshot s = state.Snapshot(1);
  EXPECT_EQ(s.FindNode("n1")->compute_used, (ComputeRequest{3000, 1LL << 30}));
  // Bound there: counted once, as before.
  PodRecord bound = pinned;
  bound.node = "n1";
  state.UpsertPod(bound);
  state.Refresh(s, 2);
  EXPECT_EQ(s.FindNode("n1")->compute_used, (ComputeRequest{3000, 1LL << 30}));
  // Found unschedulable while pinned: it holds nothing.
  PodRecord stuck = Pod("ns/stuck", "", 1);
  stuck.wanted_node = "n1";
  stuck.compute = {4000, 0};
  auto facts = std::make_shared<QueuedFacts>();
  facts->unschedulable = true;
  stuck.queued = facts;
  state.UpsertPod(stuck);
  state.Refresh(s, 3);
  EXPECT_EQ(s.FindNode("n1")->compute_used, (ComputeRequest{3000, 1LL << 30}));
}

TEST(ClusterState, TheMixCountsGpuPodsByShapeBoundOrQueuedMostCommonFirst) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", 8));
  auto pod = [](std::string key, std::string node, int64_t count, int64_t cpu) {
    PodRecord p = Pod(std::move(key), std::move(node), count);
    p.compute = {cpu, 0};
    return p;
  };
  state.UpsertPod(pod("ns/a", "n1", 1, 1500));
  state.UpsertPod(pod("ns/b", "n1", 1, 1500));               // the same shape
  state.UpsertPod(pod("ns/c", "", 2, 100));                  // queued counts too
  state.UpsertPod(pod("ns/d", "n1", 1, 1501));               // cpu is kept exact: another shape
  PodRecord t4 = pod("ns/f", "n1", 1, 1500);
  t4.gpu_products = {"Tesla-T4"};                              // a GPU type: another shape
  state.UpsertPod(t4);
  state.UpsertPod(Pod("ns/e", "n1", 1, /*terminal=*/true));  // Succeeded: gone from the mix
  std::vector<WeightedShape> mix = state.Snapshot(1).mix();
  ASSERT_EQ(mix.size(), 4u);
  EXPECT_EQ(mix[0].shape, (PodShape{k2g, 1, 1500, 0, {}}));
  EXPECT_EQ(mix[0].pods, 2);
  EXPECT_EQ(mix[1].pods, 1);
  EXPECT_EQ(mix[2].pods, 1);
  EXPECT_EQ(mix[3].pods, 1);
  EXPECT_TRUE(std::any_of(mix.begin(), mix.end(), [&](const WeightedShape& w) {
    return w.shape == PodShape{k2g, 1, 1500, 0, {"Tesla-T4"}};
  }));
  state.DeletePod("ns/a");
  state.DeletePod("ns/b");
  EXPECT_EQ(state.Snapshot(2).mix().size(), 3u);
}

// Everything a decision reads of a snapshot, as text, to compare two snapshots whole.
std::string Describe(const InventorySnapshot& s) {
  std::string out;
  for (const NodeInventory& n : s.nodes()) {
    out += n.name() + " used " + json(n.used).dump() + " queued " + json(n.queued).dump() +
           " cpu " + std::to_string(n.compute_used.cpu_milli) + "\n";
  }
  for (std::string_view r : s.ResourcesOffered()) {
    out += std::string(r) + ":";
    for (const NodeInventory* n : s.NodesOffering(r)) out += " " + n->name();
    out += "\n";
  }
  out += "queued " + json(s.queued()).dump() + " unplaceable " + json(s.unplaceable()).dump();
  out += " gated";
  for (const PodRecord& p : s.gated()) out += " " + p.key;
  out += " capacity-gated " + std::to_string(s.GatedBy(kGate));
  for (const WeightedShape& w : s.mix())
    out += " " + w.shape.resource + "x" + std::to_string(w.pods);
  return out + " pods " + std::to_string(s.pod_count());
}

TEST(ClusterState, ARefreshedSnapshotIsTheSnapshotTakenAfresh) {
  ClusterState state("gpuadmit.io/reservation");
  for (int i = 0; i < 6; ++i) {
    NodeFacts n = Node("n" + std::to_string(i), 4 + i % 3);
    n.allocatable["nvidia.com/gpu"] = 8;
    n.compute = {64000, 0};
    state.UpsertNode(n);
  }
  InventorySnapshot refreshed;
  state.Refresh(refreshed, 1);
  uint64_t x = 12345;  // a fixed linear congruential sequence: the same steps every run
  auto next = [&x](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  for (int step = 0; step < 400; ++step) {
    std::string key = "ns/p" + std::to_string(next(40));
    switch (next(4)) {
      case 0:
        state.DeletePod(key);
        break;
      case 1: {
        PodRecord p = Pod(key, "", 1 + static_cast<int64_t>(next(3)));  // queued
        if (next(2) == 0) p.need = {{"nvidia.com/gpu", 1 + static_cast<int64_t>(next(8))}};
        if (next(3) == 0)
          p.queued = std::make_shared<QueuedFacts>(QueuedFacts{.unschedulable = true});
        if (next(4) == 0) p.queued = Gated({kGate});
        state.UpsertPod(p);
        break;
      }
      default: {
        PodRecord p = Pod(key, "n" + std::to_string(next(6)), 1 + static_cast<int64_t>(next(2)));
        p.compute = {static_cast<int64_t>(next(8)) * 1000, 0};
        state.UpsertPod(p);
        break;
      }
    }
    if (step % 7 == 0 || step == 399) {
      state.Refresh(refreshed, step + 2);
      ASSERT_EQ(Describe(refreshed), Describe(state.Snapshot(step + 2))) << "step " << step;
    }
  }
}

TEST(ClusterState, ABacklogMarkedUnschedulableCountsNowhereAndHidesNoDeviceFromThePodsBehindIt) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", 4));
  auto facts = [](std::string created, bool unschedulable) {
    return std::make_shared<QueuedFacts>(
        QueuedFacts{.created = std::move(created), .unschedulable = unschedulable});
  };
  for (int i = 0; i < 3; ++i) {  // created first, marked Unschedulable by the scheduler
    PodRecord p = Pod("ns/old" + std::to_string(i), "", 2);
    p.queued = facts("2026-11-25T10:00:0" + std::to_string(i) + "Z", true);
    state.UpsertPod(p);
  }
  PodRecord fresh = Pod("ns/new", "", 3);
  fresh.queued = facts("2026-11-25T10:01:00Z", false);
  state.UpsertPod(fresh);
  InventorySnapshot refreshed;
  state.Refresh(refreshed, 1);
  InventorySnapshot taken = state.Snapshot(1);
  for (const InventorySnapshot* s : {&refreshed, &taken}) {
    EXPECT_EQ(s->unplaceable(), (ResourceList{{k2g, 6}}));
    EXPECT_EQ(s->queued(), (ResourceList{{k2g, 9}}));
    EXPECT_EQ(s->FindNode("n1")->queued, (ResourceList{{k2g, 3}}));
  }
  state.DeletePod("ns/old0");
  state.UpsertPod(Pod("ns/old1", "n1", 2));  // bound after all: 2 of 4 left, too few for new
  state.Refresh(refreshed, 2);
  EXPECT_EQ(refreshed.unplaceable(), (ResourceList{{k2g, 2 + 3}}));
  EXPECT_EQ(Describe(refreshed), Describe(state.Snapshot(2)));
}

TEST(ClusterState, AGatedPodIsNoQueuedDemandAndTheSnapshotListsItByKey) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("n1", 4));
  PodRecord waiting = Pod("ns/waiting", "", 3);
  waiting.queued = Gated({kGate}, "2026-11-25T10:00:00Z");
  PodRecord other = Pod("ns/b-other", "", 4);  // another controller's gate, and ours
  other.queued = Gated({"example.com/quota", kGate}, "2026-11-25T10:00:01Z");
  PodRecord queued = Pod("ns/queued", "", 2);
  queued.queued = Gated({}, "2026-11-25T10:00:02Z");
  for (const PodRecord& p : {waiting, other, queued}) state.UpsertPod(p);
  InventorySnapshot refreshed;
  state.Refresh(refreshed, 1);
  InventorySnapshot taken = state.Snapshot(1);
  for (const InventorySnapshot* s : {&refreshed, &taken}) {
    EXPECT_EQ(s->queued(), (ResourceList{{k2g, 2}}));
    EXPECT_TRUE(s->unplaceable().empty());
    EXPECT_EQ(s->FindNode("n1")->queued, (ResourceList{{k2g, 2}}));
    ASSERT_EQ(s->gated().size(), 2u);
    EXPECT_EQ(s->gated()[0].key, "ns/b-other");
    EXPECT_EQ(s->gated()[1].key, "ns/waiting");
    EXPECT_EQ(s->gated()[1].queued, waiting.queued);  // shared, not copied
    EXPECT_EQ(s->GatedBy(kGate), 2u);
    EXPECT_EQ(s->GatedBy("example.com/quota"), 1u);
    EXPECT_EQ(s->GatedBy("example.com/other"), 0u);
    EXPECT_EQ(s->pod_count(), 3u);
  }
  // The gate lifted: queued demand again, first in creation order, so ns/queued no longer fits.
  waiting.queued = Gated({}, "2026-11-25T10:00:00Z");
  state.UpsertPod(waiting);
  // Bound although gated (the apiserver forbids it; the inventory counts what it is told).
  other.node = "n1";
  other.need = {{k2g, 1}};
  state.UpsertPod(other);
  state.Refresh(refreshed, 2);
  InventorySnapshot after = state.Snapshot(2);
  for (const InventorySnapshot* s : {&refreshed, &after}) {
    EXPECT_TRUE(s->gated().empty());
    EXPECT_EQ(s->GatedBy(kGate), 0u);
    EXPECT_EQ(s->queued(), (ResourceList{{k2g, 5}}));
    EXPECT_EQ(s->FindNode("n1")->used, (ResourceList{{k2g, 1}}));
    EXPECT_EQ(s->FindNode("n1")->queued, (ResourceList{{k2g, 3}}));
    EXPECT_EQ(s->unplaceable(), (ResourceList{{k2g, 2}}));
  }
  EXPECT_EQ(Describe(refreshed), Describe(after));
  state.UpsertPod(Pod("ns/new", "", 1));
  PodRecord gated_again = Pod("ns/new", "", 1);
  gated_again.queued = Gated({kGate});
  state.UpsertPod(gated_again);  // gated by an update: leaves the queue
  state.DeletePod("ns/waiting");
  InventorySnapshot last = state.Snapshot(3);
  EXPECT_EQ(last.queued(), (ResourceList{{k2g, 2}}));
  ASSERT_EQ(last.gated().size(), 1u);
  EXPECT_EQ(last.gated()[0].key, "ns/new");
  state.DeletePod("ns/new");
  state.ReplacePods({gated_again});
  EXPECT_EQ(state.Snapshot(4).GatedBy(kGate), 1u);
  state.ReplacePods({});
  EXPECT_TRUE(state.Snapshot(5).gated().empty());
}

TEST(ClusterState, NodesOfPodsNamedJoinsExporterPodNamesToTheirNodes) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("gpu-a", 4));
  state.UpsertNode(Node("gpu-b", 4));
  state.UpsertPod(Pod("gpu-operator/nvidia-dcgm-exporter-s228n", "gpu-a", 0));
  state.UpsertPod(Pod("gpu-operator/nvidia-dcgm-exporter-x9k2p", "gpu-b", 0));
  state.UpsertPod(Pod("gpu-operator/nvidia-dcgm-exporter-pending", "", 0));  // not bound yet
  state.UpsertPod(Pod("default/gpu-a", "gpu-b", 0));  // named like a node: the node wins
  std::set<std::string, std::less<>> hosts = {"nvidia-dcgm-exporter-s228n",
                                              "nvidia-dcgm-exporter-x9k2p",
                                              "nvidia-dcgm-exporter-pending", "gpu-a", "unknown"};
  EXPECT_EQ(state.NodesOfPodsNamed(hosts),
            (std::map<std::string, std::string, std::less<>>{
                {"nvidia-dcgm-exporter-s228n", "gpu-a"}, {"nvidia-dcgm-exporter-x9k2p", "gpu-b"}}));
  EXPECT_TRUE(state.NodesOfPodsNamed({}).empty());
}

TEST(ClusterState, IndexesListNodesMostFreeFirst) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("a", 4));
  state.UpsertNode(Node("b", 8));
  state.UpsertNode(Node("c", 4));
  state.UpsertPod(Pod("ns/x", "c", 3));
  InventorySnapshot s = state.Snapshot(1);
  std::vector<std::string> order;
  for (const NodeInventory* n : s.NodesOffering(k2g)) order.push_back(n->name());
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_TRUE(s.NodesOffering("nvidia.com/gpu").empty());
}

TEST(ClusterState, AReplaceAfterRelistDropsWhatIsGone) {
  ClusterState state("gpuadmit.io/reservation");
  state.UpsertNode(Node("old", 4));
  state.UpsertPod(Pod("ns/gone", "old", 1));
  state.ReplaceNodes({Node("new", 2)});
  state.ReplacePods({Pod("ns/kept", "new", 1)});
  InventorySnapshot s = state.Snapshot(1);
  ASSERT_EQ(s.nodes().size(), 1u);
  EXPECT_EQ(s.FindNode("new")->Free(k2g), 1);
  EXPECT_EQ(s.pod_count(), 1u);
}

TEST(ClusterState, PodsCarryingAReservationKeyAreReportedOnceWhenTheyArrive) {
  ClusterState state("gpuadmit.io/reservation");
  PodRecord p = Pod("ns/a", "", 1);
  p.reservation = "uid-1";
  state.UpsertPod(p);
  state.UpsertPod(p);  // a MODIFIED event: not a second arrival
  EXPECT_EQ(state.TakeArrivedReservations(), std::vector<std::string>{"uid-1"});
  EXPECT_TRUE(state.TakeArrivedReservations().empty());
}

TEST(ReadPod, ReadsARealPodAlikeOffTheTapeAndOffAnNlohmannValue) {
  std::string text =
      testing::ReadSourceFile("tests/fixtures/pods/pod-runai-reservation-nvidia-gpu-1.yaml");
  auto doc = YamlToJson(text);
  ASSERT_TRUE(doc.ok());
  auto tape = JsonTape::Parse(doc.value().dump(), 512);
  ASSERT_NE(tape, nullptr);
  PodRecord full = ReadPod(doc.value(), "gpuadmit.io/reservation");
  PodRecord lean = ReadPod(tape->root(), "gpuadmit.io/reservation");
  EXPECT_EQ(lean.key, full.key);
  EXPECT_EQ(lean.node, full.node);
  EXPECT_EQ(lean.need, (ResourceList{{"nvidia.com/gpu", 1}}));
  EXPECT_EQ(lean.need, full.need);
  EXPECT_EQ(lean.terminal, full.terminal);
}

TEST(ReadNode, ReadsARealNodeAlikeOffTheTapeAndOffAnNlohmannValue) {
  auto doc = YamlToJson(testing::ReadSourceFile(
      "tests/fixtures/nodes/a100-sxm4-40gb-mig-mixed-3x1g.5gb-1x2g.10gb-kubectl-edit.yaml"));
  ASSERT_TRUE(doc.ok());
  const json& node = doc.value();
  auto tape = JsonTape::Parse(node.dump(), 512);
  ASSERT_NE(tape, nullptr);
  NodeFacts full = ReadNode(node);
  NodeFacts lean = ReadNode(tape->root());
  EXPECT_FALSE(full.name.empty());
  EXPECT_EQ(lean.name, full.name);
  EXPECT_EQ(lean.labels, full.labels);
  EXPECT_EQ(lean.allocatable, full.allocatable);
  EXPECT_EQ(lean.compute.cpu_milli, full.compute.cpu_milli);
  EXPECT_EQ(lean.compute.memory_bytes, full.compute.memory_bytes);
  EXPECT_EQ(lean.ready, full.ready);
  EXPECT_EQ(lean.gpu.mig_counts, full.gpu.mig_counts);
  EXPECT_FALSE(full.gpu.mig_counts.empty());
}

TEST(ReadPod, APendingPodPinnedToOneNodeSaysWhich) {
  json pod = json::parse(R"({"metadata":{"namespace":"ns","name":"ds-1"},"spec":{"affinity":{
    "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
    {"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-small"]}]}]}}},
    "containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})");
  PodRecord p = ReadPod(pod, "gpuadmit.io/reservation");
  EXPECT_EQ(p.key, "ns/ds-1");
  EXPECT_EQ(p.wanted_node, "gpu-small");
  ClusterState state("gpuadmit.io/reservation");
  NodeFacts node = Node("gpu-small", 0);
  node.allocatable = {{"nvidia.com/gpu", 2}};
  state.UpsertNode(node);
  state.UpsertPod(p);
  InventorySnapshot s = state.Snapshot(1);
  EXPECT_EQ(s.FindNode("gpu-small")->queued, (ResourceList{{"nvidia.com/gpu", 1}}));
  EXPECT_EQ(s.FindNode("gpu-small")->Free("nvidia.com/gpu"), 1);
}

// A pending pod asking one GPU, held back by two scheduling gates, at priority 1000.
constexpr char kGatedPod[] = R"({"metadata":{"namespace":"ml","name":"train-0",
  "creationTimestamp":"2026-11-25T10:00:00Z","uid":"u-1","labels":{"app":"train"}},
  "spec":{"priority":1000,"priorityClassName":"high",
  "schedulingGates":[{"name":"example.com/quota"},{"name":"gpuadmit.io/capacity"}],
  "containers":[{"name":"c","image":"cuda","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},
  "status":{"phase":"Pending"}})";

TEST(ReadPod, KeepsSchedulingGatesAndPriorityOffAListPageAndAWatchEvent) {
  json pod = json::parse(kGatedPod);
  PodRecord full = ReadPod(pod, "gpuadmit.io/reservation");
  ASSERT_NE(full.queued, nullptr);
  EXPECT_EQ(full.queued->scheduling_gates,
            (std::vector<std::string>{"example.com/quota", "gpuadmit.io/capacity"}));
  EXPECT_EQ(full.queued->priority, 1000);
  json list = {{"kind", "PodList"}, {"metadata", {{"resourceVersion", "7"}}}, {"items", {pod}}};
  json event = {{"type", "MODIFIED"}, {"object", pod}};
  auto list_tape = JsonTape::Parse(list.dump(), 512);
  auto event_tape = JsonTape::Parse(event.dump(), 512);
  ASSERT_TRUE(list_tape != nullptr && event_tape != nullptr);
  for (JsonView kept : {list_tape->root()["items"][0], event_tape->root()["object"]}) {
    PodRecord lean = ReadPod(kept, "gpuadmit.io/reservation");
    ASSERT_NE(lean.queued, nullptr);
    EXPECT_EQ(lean.queued->scheduling_gates, full.queued->scheduling_gates);
    EXPECT_EQ(lean.queued->priority, 1000);
  }
  // No gates, no priority, or a priority past int32: none, 0.
  pod["spec"].erase("schedulingGates");
  pod["spec"]["priority"] = 4294967296LL;
  PodRecord plain = ReadPod(pod, "gpuadmit.io/reservation");
  EXPECT_TRUE(plain.queued->scheduling_gates.empty());
  EXPECT_EQ(plain.queued->priority, 0);
  pod["spec"]["priority"] = -5;
  EXPECT_EQ(ReadPod(pod, "gpuadmit.io/reservation").queued->priority, -5);
}

TEST(InventorySnapshot, FromObjectsKeepsGatedPodsOutOfQueuedDemand) {
  json node = {{"kind", "Node"},
               {"metadata", {{"name", "gpu-a"}}},
               {"status",
                {{"allocatable", {{"nvidia.com/gpu", "8"}}},
                 {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  json gated = json::parse(kGatedPod);
  gated["kind"] = "Pod";
  json queued = gated;
  queued["metadata"]["name"] = "train-1";
  queued["spec"].erase("schedulingGates");
  auto s = InventorySnapshot::FromObjects({{"kind", "List"}, {"items", {node, gated, queued}}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().queued(), (ResourceList{{"nvidia.com/gpu", 1}}));
  EXPECT_EQ(s.value().FindNode("gpu-a")->Free("nvidia.com/gpu"), 7);
  ASSERT_EQ(s.value().gated().size(), 1u);
  EXPECT_EQ(s.value().gated()[0].key, "ml/train-0");
  EXPECT_EQ(s.value().GatedBy("gpuadmit.io/capacity"), 1u);
}

}  // namespace
}  // namespace gpuadmit

namespace gpuadmit {
namespace {

TEST(ReadNode, ReadsGpuFeatureDiscoveryLabelsOfARealMigNode) {
  auto node = YamlToJson(testing::ReadSourceFile(
      "tests/fixtures/nodes/a100-sxm4-40gb-mig-mixed-3x1g.5gb-1x2g.10gb-kubectl-edit.yaml"));
  ASSERT_TRUE(node.ok());
  NodeFacts n = ReadNode(node.value());
  EXPECT_EQ(n.gpu.product, "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(n.gpu.count, 1);
  EXPECT_EQ(n.gpu.memory_mib, 40960);
  EXPECT_EQ(n.gpu.mig_strategy, "mixed");
  EXPECT_TRUE(n.gpu.mig_capable);
  EXPECT_EQ(n.gpu.mig_counts,
            (ResourceList{{"nvidia.com/mig-1g.5gb", 3}, {"nvidia.com/mig-2g.10gb", 1}}));
}

}  // namespace
}  // namespace gpuadmit
