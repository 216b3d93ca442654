#include "core/inventory/cluster_state.h"

#include <algorithm>
#include <unordered_set>

#include "core/inventory/queued_demand.h"

namespace gpuadmit {
namespace {

// Adds sign * add into `into`, dropping entries that reach zero.
void AddInto(ResourceList& into, const ResourceList& add, int sign) {
  for (const auto& [resource, count] : add) {
    int64_t& slot = into[resource];
    slot += sign * count;
    if (slot == 0) into.erase(resource);
  }
}

// The kMixShapes most common shapes, most pods first (ties by shape).
std::vector<WeightedShape> MostCommon(const std::map<PodShape, int64_t>& mix) {
  std::vector<WeightedShape> out;
  out.reserve(mix.size());
  for (const auto& [shape, pods] : mix) out.push_back({shape, pods});
  auto more = [](const WeightedShape& a, const WeightedShape& b) {
    return a.pods != b.pods ? a.pods > b.pods : a.shape < b.shape;
  };
  if (out.size() > kMixShapes) {
    std::partial_sort(out.begin(), out.begin() + kMixShapes, out.end(), more);
    out.resize(kMixShapes);
  } else {
    std::sort(out.begin(), out.end(), more);
  }
  return out;
}

// An unbound pod the scheduler does not see yet: it carries a scheduling gate.
bool IsGated(const PodRecord& pod) {
  return pod.node.empty() && pod.queued && !pod.queued->scheduling_gates.empty();
}

}  // namespace

void ClusterState::Count(const PodRecord& pod, int sign) {
  if (pod.terminal) return;
  if (tracking_ && !pod.node.empty()) changed_.insert(pod.node);
  // cpu and memory count where the pod runs, or where a required affinity pins it while the
  // scheduler has not bound it yet (unless it found it no room there): it can go nowhere else.
  const bool stuck = pod.queued && pod.queued->unschedulable;
  const std::string& at = pod.node.empty() && !stuck ? pod.wanted_node : pod.node;
  if (!at.empty() && pod.compute != ComputeRequest{}) {
    if (tracking_) changed_.insert(at);
    ComputeRequest& c = compute_used_[at];
    c.cpu_milli += sign * pod.compute.cpu_milli;
    c.memory_bytes += sign * pod.compute.memory_bytes;
    if (c == ComputeRequest{}) compute_used_.erase(at);
  }
  if (pod.names_claims && pod.node.empty() && !pod.reservation.empty() && !stuck && !IsGated(pod)) {
    if (sign > 0) {
      claim_pods_[pod.key] = pod.reservation;
    } else {
      claim_pods_.erase(pod.key);
    }
  }
  if (pod.need.empty()) return;
  if (std::optional<PodShape> shape = ShapeOf(pod)) {
    auto [it, added] = mix_.try_emplace(std::move(*shape), 0);
    it->second += sign;
    if (it->second == 0) mix_.erase(it);
  }
  if (!pod.node.empty()) {
    ResourceList& used = used_[pod.node];
    AddInto(used, pod.need, sign);
    if (used.empty()) used_.erase(pod.node);
    return;
  }
  if (IsGated(pod)) {
    // Not the scheduler's to place yet, so no device is spoken for: kept aside for the lifter.
    if (sign > 0) {
      gated_.insert(pod.key);
    } else {
      gated_.erase(pod.key);
    }
    return;
  }
  AddInto(queued_, pod.need, sign);
  // A pod the scheduler marked Unschedulable counts nowhere (queued_demand.h), whatever comes
  // before it: kept as a sum, it costs a recount nothing, however long the backlog.
  if (pod.queued && pod.queued->unschedulable) {
    AddInto(unschedulable_need_, pod.need, sign);
    return;
  }
  std::pair<std::string, std::string> entry(pod.queued ? pod.queued->created : "", pod.key);
  if (sign > 0) {
    queue_.insert(std::move(entry));
  } else {
    queue_.erase(entry);
  }
}

void ClusterState::UpsertNode(NodeFacts node) {
  std::string name = node.name;
  merged_.erase(name);
  nodes_[name] = std::make_shared<const NodeFacts>(std::move(node));
}

void ClusterState::DeleteNode(std::string_view name) {
  merged_.erase(std::string(name));
  nodes_.erase(std::string(name));
}

void ClusterState::DraChanged() {
  dra_counts_.reset();
  dra_devices_.reset();
  merged_.clear();
  dra_changed_ = true;
}

void ClusterState::UpsertClaim(ResourceClaimRecord claim) {
  if (!claim.allocated.empty() && !claim.owner_pod.empty()) {
    auto pod = pods_.find(claim.owner_pod);
    if (pod != pods_.end() && !pod->second.reservation.empty()) {
      arrived_reservations_.push_back(pod->second.reservation);
    }
  }
  dra_.UpsertClaim(std::move(claim));
  DraChanged();
}

const DraNodeCounts* ClusterState::DraCountsOf(const std::string& name) const {
  if (dra_.empty()) return nullptr;
  if (!dra_counts_) dra_counts_ = dra_.CountByNode();
  auto counts = dra_counts_->find(name);
  return counts == dra_counts_->end() ? nullptr : &counts->second;
}

std::shared_ptr<const NodeFacts> ClusterState::FactsOf(
    const std::string& name, const std::shared_ptr<const NodeFacts>& facts) const {
  const DraNodeCounts* counts = DraCountsOf(name);
  if (counts == nullptr) return facts;
  auto& slot = merged_[name];
  if (slot) return slot;
  NodeFacts merged = *facts;
  AddDraCounts(*counts, merged);
  slot = std::make_shared<const NodeFacts>(std::move(merged));
  return slot;
}

ResourceList ClusterState::UsedOn(const std::string& name, const NodeFacts& facts) const {
  auto pods = used_.find(name);
  ResourceList used = pods == used_.end() ? ResourceList{} : pods->second;
  const DraNodeCounts* counts = DraCountsOf(name);
  if (counts == nullptr) return used;
  for (const auto& [resource, count] : counts->used) {
    if (facts.dra_allocatable.contains(resource)) used[resource] += count;
  }
  return used;
}

void ClusterState::UpsertPod(PodRecord pod) {
  // A pod whose devices are its claims' arrives with nothing counted: its claims release it.
  const bool counted = !pod.names_claims || !pod.need.empty();
  auto it = pods_.find(pod.key);
  if (it != pods_.end()) {
    Count(it->second, -1);
    if (counted && !pod.reservation.empty() && pod.reservation != it->second.reservation) {
      arrived_reservations_.push_back(pod.reservation);
    }
    Count(pod, +1);
    it->second = std::move(pod);
    return;
  }
  if (counted && !pod.reservation.empty()) arrived_reservations_.push_back(pod.reservation);
  Count(pod, +1);
  std::string key = pod.key;
  pods_.emplace(std::move(key), std::move(pod));
}

void ClusterState::DeletePod(std::string_view key) {
  auto it = pods_.find(std::string(key));
  if (it == pods_.end()) return;
  Count(it->second, -1);
  pods_.erase(it);
}

void ClusterState::ReplaceNodes(std::vector<NodeFacts> nodes) {
  nodes_.clear();
  merged_.clear();
  for (NodeFacts& n : nodes) UpsertNode(std::move(n));
}

void ClusterState::ReplacePods(std::vector<PodRecord> pods) {
  pods_.clear();
  used_.clear();
  compute_used_.clear();
  mix_.clear();
  queued_.clear();
  queue_.clear();
  unschedulable_need_.clear();
  gated_.clear();
  claim_pods_.clear();
  for (PodRecord& p : pods) UpsertPod(std::move(p));
}

ResourceList ClusterState::CountQueue(std::vector<NodeInventory>& nodes) const {
  std::vector<const PodRecord*> queue;
  queue.reserve(queue_.size());
  for (const auto& [created, key] : queue_) queue.push_back(&pods_.at(key));
  ResourceList unplaceable = CountQueuedDemand(queue, nodes);
  AddInto(unplaceable, unschedulable_need_, 1);
  return unplaceable;
}

std::shared_ptr<const std::map<std::string, NodeDevices, std::less<>>> ClusterState::DraDevicesNow()
    const {
  if (!dra_devices_ && !dra_.empty()) {
    dra_devices_ = std::make_shared<const std::map<std::string, NodeDevices, std::less<>>>(
        dra_.DevicesByNode());
  }
  return dra_devices_;
}

InventorySnapshot::Totals ClusterState::TotalsOf(uint64_t version,
                                                 ResourceList unplaceable) const {
  InventorySnapshot::Totals totals{.queued = queued_,
                                   .unplaceable = std::move(unplaceable),
                                   .mix = MostCommon(mix_),
                                   .device_classes = dra_.classes(),
                                   .claim_templates = dra_.templates(),
                                   .dra_devices = DraDevicesNow(),
                                   .claim_pod_reservations = claim_pods_,
                                   .pod_count = pods_.size(),
                                   .version = version};
  totals.gated.reserve(gated_.size());
  for (const std::string& key : gated_) totals.gated.push_back(pods_.at(key));
  return totals;
}

InventorySnapshot ClusterState::Snapshot(uint64_t version) const {
  std::vector<NodeInventory> nodes;
  nodes.reserve(nodes_.size());
  for (const auto& [name, facts] : nodes_) {
    NodeInventory n{FactsOf(name, facts), {}};
    n.used = UsedOn(name, *n.facts);
    if (auto it = compute_used_.find(name); it != compute_used_.end()) n.compute_used = it->second;
    nodes.push_back(std::move(n));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeInventory& a, const NodeInventory& b) { return a.name() < b.name(); });
  ResourceList unplaceable = CountQueue(nodes);
  return InventorySnapshot(std::move(nodes), TotalsOf(version, std::move(unplaceable)));
}

void ClusterState::Refresh(InventorySnapshot& s, uint64_t version) {
  if (!tracking_ || dra_changed_) {  // a DRA change may move any node's devices
    s = Snapshot(version);
    tracking_ = true;
    dra_changed_ = false;
    changed_.clear();
    return;
  }
  ResourceList unplaceable;
  s.UpdateNodes([&](std::vector<NodeInventory>& nodes) {
    // Nodes whose queued demand may move: those holding some before the recount, and after it.
    std::vector<const NodeInventory*> moved;
    for (NodeInventory& n : nodes) {
      if (!n.queued.empty()) {
        n.queued.clear();
        moved.push_back(&n);
      }
    }
    for (const std::string& name : changed_) {
      auto at = IndexOfNode(nodes, name);
      if (!at) continue;
      NodeInventory& n = nodes[*at];
      n.used = UsedOn(name, *n.facts);
      auto compute = compute_used_.find(name);
      n.compute_used = compute == compute_used_.end() ? ComputeRequest{} : compute->second;
      moved.push_back(&n);
    }
    unplaceable = CountQueue(nodes);
    for (const NodeInventory& n : nodes) {
      if (!n.queued.empty()) moved.push_back(&n);
    }
    return moved;
  });
  changed_.clear();
  s.SetTotals(TotalsOf(version, std::move(unplaceable)));
}

std::map<std::string, std::string, std::less<>> ClusterState::NodesOfPodsNamed(
    const std::set<std::string, std::less<>>& names) const {
  std::map<std::string, std::string, std::less<>> out;
  if (names.empty()) return out;
  for (const auto& [key, pod] : pods_) {
    if (pod.node.empty()) continue;
    std::string_view name = std::string_view(key).substr(key.find('/') + 1);
    if (names.find(name) == names.end()) continue;
    if (nodes_.count(std::string(name)) > 0) continue;  // a node's own name stays that node
    out.emplace(std::string(name), pod.node);
  }
  return out;
}

std::set<std::string, std::less<>> ClusterState::WaitingClaimReservations() const {
  std::set<std::string, std::less<>> out;
  for (const auto& [pod, reservation] : claim_pods_) out.insert(reservation);
  return out;
}

std::vector<std::string> ClusterState::TakeArrivedReservations() {
  std::vector<std::string> out;
  out.swap(arrived_reservations_);
  return out;
}

std::vector<NodeFacts> ClusterState::Nodes() const {
  std::vector<NodeFacts> nodes;
  nodes.reserve(nodes_.size());
  for (const auto& [name, facts] : nodes_) nodes.push_back(*facts);
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeFacts& a, const NodeFacts& b) { return a.name < b.name; });
  return nodes;
}

std::vector<PodRecord> ClusterState::Pods() const {
  std::vector<PodRecord> pods;
  pods.reserve(pods_.size());
  for (const auto& [key, pod] : pods_) pods.push_back(pod);
  std::sort(pods.begin(), pods.end(),
            [](const PodRecord& a, const PodRecord& b) { return a.key < b.key; });
  return pods;
}

}  // namespace gpuadmit
