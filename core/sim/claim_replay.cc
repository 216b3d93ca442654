#include "core/sim/claim_replay.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "core/admission/base64.h"
#include "core/admission/review.h"
#include "core/dra/dra_objects.h"
#include "core/inventory/inventory.h"
#include "core/inventory/reservation_ledger.h"
#include "core/json/json_fields.h"
#include "core/kube/gpu_equivalents.h"
#include "core/sim/scheduler_model.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr int64_t kDynamicResourcesWeight = 2;
constexpr std::chrono::seconds kReservationTtl{30};  // as Replay's

// An AdmissionReview of a CREATE of `object` (a Pod or a ResourceClaim).
json ReviewOf(const json& object, const std::string& uid) {
  const bool pod = object.value("kind", "") == "Pod";
  json kind = pod ? json{{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}
                  : json{{"group", "resource.k8s.io"}, {"version", "v1"},
                         {"kind", "ResourceClaim"}};
  json resource = pod ? json{{"group", ""}, {"version", "v1"}, {"resource", "pods"}}
                      : json{{"group", "resource.k8s.io"}, {"version", "v1"},
                             {"resource", "resourceclaims"}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", std::move(kind)},
            {"resource", std::move(resource)},
            {"name", StringAt(object, {"metadata", "name"})},
            {"namespace", StringAt(object, {"metadata", "namespace"})},
            {"operation", "CREATE"},
            {"object", object}}}};
}

// `object` as the review of it leaves it (unchanged when the answer carries no patch).
json Reviewed(json object, const std::string& uid, const ReviewContext& context) {
  auto answer = Review(ReviewOf(object, uid).dump(), context);
  if (!answer.ok()) return object;
  json body = json::parse(answer.value().body, nullptr, /*allow_exceptions=*/false);
  const json& encoded = At(body, {"response", "patch"});
  if (!encoded.is_string()) return object;
  auto text = Base64Decode(encoded.get<std::string>());
  if (!text.ok()) return object;
  try {  // nlohmann's patch() throws on an operation that does not apply
    return object.patch(json::parse(text.value()));
  } catch (const json::exception&) {
    return object;
  }
}

// One allocated device.
struct Taken {
  std::string request;  // "gpu" or "gpu/2g-20gb" (a firstAvailable entry)
  std::string driver, pool, device;
  double gpus = 0;  // GPU equivalents
};

// One claim's requests as the allocator's first fit meets them on one node.
struct NodeFit {
  std::vector<Taken> taken;
  int64_t rank = 0;  // DynamicResources' raw score
};

// The first devices of `pools` (taken out of them) that `a` selects, or none.
std::vector<Taken> TakeFirstFit(NodeDevices& pools, const DeviceAlternative& a,
                                const InventorySnapshot& s) {
  SelectorFacts facts = WithClassOf(a, s.device_classes());
  NodeDevices trial = pools;
  std::vector<Taken> got;
  for (PoolDevices& pool : trial) {
    for (auto d = pool.idle.begin(); d != pool.idle.end() && got.size() < size_t(a.count);) {
      if (!Selects(facts, pool.driver, *d) || !Consume(*d, pool.left)) {
        ++d;
        continue;
      }
      std::string resource = DeviceResource(pool.driver, *d);
      got.push_back({"", pool.driver, pool.pool, d->name,
                     resource.empty() ? 0 : GpuEquivalents(resource, 1, 1)});
      d = pool.idle.erase(d);
    }
  }
  if (got.size() < size_t(a.count)) return {};
  pools = std::move(trial);
  return got;
}

// The allocation of `claim` on a node whose devices are `pools` (taken out of them), or nullopt.
std::optional<NodeFit> FitOn(NodeDevices& pools, const json& claim, const InventorySnapshot& s) {
  NodeFit fit;
  for (const json& request : At(claim, {"spec", "devices", "requests"})) {
    const std::string name = request.value("name", "");
    const json& entries = At(request, {"firstAvailable"});
    std::vector<DeviceAlternative> alternatives = ReadAlternatives(JsonView(request));
    size_t k = 0;
    for (; k < alternatives.size(); ++k) {
      std::vector<Taken> got = TakeFirstFit(pools, alternatives[k], s);
      if (got.empty()) continue;
      std::string ref = name;
      if (entries.is_array()) {
        ref += "/" + StringAt(entries[k], {"name"});
        fit.rank += static_cast<int64_t>(kMaxSubRequests - k);
      }
      for (Taken& t : got) t.request = ref;
      fit.taken.insert(fit.taken.end(), got.begin(), got.end());
      break;
    }
    if (k == alternatives.size()) return std::nullopt;
  }
  return fit;
}

// A pod of the stream, with the claims made for it.
struct StreamPod {
  json pod;
  std::vector<json> claims;  // as created, then as reviewed
  SimPod sim;
  double arrived = 0;
  std::optional<double> duration;
  size_t node = 0;  // once bound
  double asked = 0;  // GPU equivalents, as created
  double gpus = 0;   // allocated
};

class ClaimCluster {
 public:
  ClaimCluster(const json& cluster, const Policy* policy)
      : policy_(policy), ledger_(kReservationTtl), reservations_(ledger_, &now_) {
    for (const json& item : At(cluster, {"items"})) {
      if (StringAt(item, {"kind"}) == "Node") nodes_.push_back(SimNodeOf(item));
      base_.push_back(item);
    }
    std::sort(nodes_.begin(), nodes_.end(),
              [](const SimNode& a, const SimNode& b) { return a.facts->name < b.facts->name; });
  }

  bool reviews() const { return policy_ != nullptr; }
  // Simulated time, for the reservations the reviews commit.
  void SetTime(double seconds) {
    now_ = ReservationLedger::TimePoint(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(seconds)));
  }

  // The cluster now; `pending_claims`: with the claims not yet allocated (what the webhook's
  // watch shows), else without (what the allocator goes by).
  InventorySnapshot Snapshot(bool pending_claims) const {
    json list = {{"kind", "List"}, {"items", base_}};
    json& items = list["items"];
    for (const auto& [key, p] : pods_) {
      items.push_back(p->pod);
      for (const json& c : p->claims) {
        if (pending_claims || At(c, {"status", "allocation"}).is_object()) items.push_back(c);
      }
    }
    auto s = InventorySnapshot::FromObjects(list, reservation_annotation());
    return s.ok() ? std::move(s).value() : InventorySnapshot{};
  }

  std::string reservation_annotation() const {
    return (policy_ != nullptr ? *policy_ : Policy{}).Annotation("reservation");
  }

  ReviewContext Context(const InventorySnapshot& s) {
    return ReviewContext{s, *policy_, nullptr, &reservations_};
  }

  void Add(StreamPod* p) { pods_[KeyOf(*p)] = p; }
  void Remove(StreamPod* p) {
    Drop(p);
    Unbind(p->sim, nodes_[p->node]);
  }
  // Forgets `p` and its claims, and ends its reservation.
  void Drop(StreamPod* p) {
    pods_.erase(KeyOf(*p));
    std::string key = StringAt(p->pod, {"metadata", "annotations", reservation_annotation()});
    if (!key.empty()) ledger_.Release(key);
  }

  // Binds `p` where the scheduler would, allocating its claims; false when no node can take it.
  bool Schedule(StreamPod& p) {
    InventorySnapshot s = Snapshot(false);
    std::vector<int64_t> scores = ScoreNodes(p.sim, nodes_);
    std::vector<std::optional<std::vector<NodeFit>>> fits(nodes_.size());
    int64_t best_rank = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (scores[i] < 0) continue;
      auto devices = s.dra_devices().find(nodes_[i].facts->name);
      if (devices == s.dra_devices().end()) continue;
      NodeDevices pools = devices->second;
      std::vector<NodeFit> node_fits;
      for (const json& claim : p.claims) {
        std::optional<NodeFit> fit = FitOn(pools, claim, s);
        if (!fit) break;
        node_fits.push_back(std::move(*fit));
      }
      if (node_fits.size() != p.claims.size()) continue;
      fits[i] = std::move(node_fits);
      best_rank = std::max(best_rank, RankOf(*fits[i]));
    }
    std::optional<size_t> best;
    int64_t best_total = -1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!fits[i]) continue;
      int64_t total = scores[i];
      if (best_rank > 0) {
        total += kDynamicResourcesWeight * RankOf(*fits[i]) * kMaxNodeScore / best_rank;
      }
      if (total > best_total) best_total = total, best = i;
    }
    if (!best) return false;
    p.node = *best;
    p.pod["spec"]["nodeName"] = nodes_[*best].facts->name;
    Bind(p.sim, nodes_[*best]);
    p.gpus = 0;
    for (size_t c = 0; c < p.claims.size(); ++c) {
      json results = json::array();
      for (const Taken& t : (*fits[*best])[c].taken) {
        results.push_back(
            {{"request", t.request}, {"driver", t.driver}, {"pool", t.pool}, {"device", t.device}});
        p.gpus += t.gpus;
      }
      p.claims[c]["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
    }
    std::string key = StringAt(p.pod, {"metadata", "annotations", reservation_annotation()});
    if (!key.empty()) ledger_.Release(key);
    return true;
  }

 private:
  static std::string KeyOf(const StreamPod& p) {
    return StringAt(p.pod, {"metadata", "namespace"}) + "/" + StringAt(p.pod, {"metadata", "name"});
  }
  static int64_t RankOf(const std::vector<NodeFit>& fits) {
    int64_t rank = 0;
    for (const NodeFit& f : fits) rank += f.rank;
    return rank;
  }

  const Policy* policy_;
  json base_ = json::array();
  std::vector<SimNode> nodes_;
  std::map<std::string, StreamPod*> pods_;  // by namespace/name: pending and bound
  ReservationLedger ledger_;
  ReservationLedger::TimePoint now_{};
  LedgerReservations reservations_;
};

// The claims the resourceclaim controller makes for `pod` from `templates` (by namespace/name).
Result<std::vector<json>> ClaimsFor(const json& pod, const json& templates) {
  const std::string name = StringAt(pod, {"metadata", "name"});
  const std::string ns = pod["metadata"].value("namespace", "default");
  std::vector<json> out;
  for (const json& entry : At(pod, {"spec", "resourceClaims"})) {
    const std::string from = StringAt(entry, {"resourceClaimTemplateName"});
    if (from.empty()) continue;
    auto t = templates.find(ns + "/" + from);
    if (t == templates.end()) {
      return Error{"pod " + ns + "/" + name + " names ResourceClaimTemplate " + from +
                   ", which the cluster file does not hold"};
    }
    const std::string claim_name = StringAt(entry, {"name"});
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata",
                   {{"name", name + "-" + claim_name},
                    {"namespace", ns},
                    {"annotations", {{"resource.kubernetes.io/pod-claim-name", claim_name}}},
                    {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                                      {"kind", "Pod"},
                                                      {"name", name},
                                                      {"uid", name},
                                                      {"controller", true}}})}}},
                  {"spec", At(*t, {"spec", "spec"})}};
    for (const json& request : At(claim, {"spec", "devices", "requests"})) {
      for (const DeviceAlternative& a : ReadAlternatives(JsonView(request))) {
        if (a.all) {
          return Error{"claim " + ns + "/" + name + ": allocationMode All is not modelled"};
        }
      }
    }
    out.push_back(std::move(claim));
  }
  return out;
}

// What `claim`'s requests ask first, in GPU equivalents.
double DemandOf(const json& claim, const InventorySnapshot& s) {
  double gpus = 0;
  for (const json& request : At(claim, {"spec", "devices", "requests"})) {
    std::vector<DeviceAlternative> alternatives = ReadAlternatives(JsonView(request));
    if (alternatives.empty()) continue;
    const DeviceAlternative& a = alternatives.front();
    std::string resource = AskedResource(WithClassOf(a, s.device_classes()));
    if (!resource.empty()) gpus += GpuEquivalents(resource, a.count, 1);
  }
  return gpus;
}

// The cluster file's GPUs, one per GPU (the distinct GPUs its devices are or are part of), and
// the GPU equivalents its allocated claims hold.
struct GpuTotals {
  double capacity = 0;
  double held = 0;
};

GpuTotals TotalsOf(const json& cluster) {
  std::set<std::string> gpus;
  std::map<DeviceRef, double> devices;
  std::vector<ResourceClaimRecord> claims;
  for (const json& item : At(cluster, {"items"})) {
    const std::string kind = StringAt(item, {"kind"});
    if (kind == "ResourceClaim") claims.push_back(ReadResourceClaim(JsonView(item)));
    if (kind != "ResourceSlice") continue;
    ResourceSliceRecord slice = ReadResourceSlice(JsonView(item));
    for (const DraDevice& d : slice.devices) {
      if (!GpuOf(d).empty()) gpus.insert(GpuOf(d));
      std::string resource = DeviceResource(slice.driver, d);
      devices[{slice.driver, slice.pool, d.name}] =
          resource.empty() ? 0 : GpuEquivalents(resource, 1, 1);
    }
  }
  GpuTotals totals{static_cast<double>(gpus.size()), 0};
  for (const ResourceClaimRecord& c : claims) {
    for (const DeviceRef& ref : c.allocated) {
      if (auto it = devices.find(ref); it != devices.end()) totals.held += it->second;
    }
  }
  return totals;
}

}  // namespace

bool IsClaimScenario(const json& cluster, std::span<const Arrival> arrivals) {
  const json& items = At(cluster, {"items"});
  bool slices = std::any_of(items.begin(), items.end(), [](const json& item) {
    return StringAt(item, {"kind"}) == "ResourceSlice";
  });
  return slices && std::any_of(arrivals.begin(), arrivals.end(), [](const Arrival& a) {
           const json& claims = At(a.pod, {"spec", "resourceClaims"});
           return std::any_of(claims.begin(), claims.end(), [](const json& c) {
             return !StringAt(c, {"resourceClaimTemplateName"}).empty();
           });
         });
}

Result<ReplayResult> ClaimReplay(const json& cluster, std::span<const Arrival> arrivals,
                                 const Policy* policy, bool drop_unplaced) {
  json templates = json::object();
  for (const json& item : At(cluster, {"items"})) {
    if (StringAt(item, {"kind"}) != "ResourceClaimTemplate") continue;
    templates[StringAt(item, {"metadata", "namespace"}) + "/" +
              StringAt(item, {"metadata", "name"})] = item;
  }
  ClaimCluster state(cluster, policy);
  ReplayResult result;
  const GpuTotals totals = TotalsOf(cluster);
  result.capacity_gpus = totals.capacity;
  result.allocated_gpus = totals.held;
  std::vector<StreamPod> pods(arrivals.size());
  std::vector<size_t> pending;  // arrival order
  using Leave = std::pair<double, size_t>;
  std::priority_queue<Leave, std::vector<Leave>, std::greater<>> leaving;

  auto bind = [&](size_t i, double now) {
    StreamPod& p = pods[i];
    if (!state.Schedule(p)) return false;
    result.allocated_gpus += p.gpus;
    result.waits.push_back(now - p.arrived);
    if (p.gpus + 1e-9 < p.asked) ++result.fallbacks;  // a smaller profile than asked
    if (p.duration) leaving.push({now + *p.duration, i});
    return true;
  };
  auto leave_until = [&](double t) {
    while (!leaving.empty() && leaving.top().first <= t) {
      const double now = leaving.top().first;
      const size_t i = leaving.top().second;
      leaving.pop();
      state.Remove(&pods[i]);
      result.allocated_gpus -= pods[i].gpus;
      std::erase_if(pending, [&](size_t j) { return bind(j, now); });
    }
  };

  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    leave_until(a.at);
    state.SetTime(a.at);
    StreamPod& p = pods[i];
    p.pod = a.pod;
    p.pod["metadata"]["namespace"] = p.pod["metadata"].value("namespace", "default");
    p.arrived = a.at;
    p.duration = a.duration;
    auto claims = ClaimsFor(p.pod, templates);
    if (!claims.ok()) return claims.error();
    {
      InventorySnapshot s = state.Snapshot(true);
      for (const json& c : claims.value()) p.asked += DemandOf(c, s);
      result.demand_gpus += p.asked;
      if (state.reviews()) p.pod = Reviewed(std::move(p.pod), "pod-" + std::to_string(i),
                                            state.Context(s));
    }
    p.sim = SimPodFromSpec(p.pod["spec"]);
    state.Add(&p);
    for (json& c : claims.value()) {
      if (state.reviews()) {
        InventorySnapshot s = state.Snapshot(true);
        c = Reviewed(std::move(c), "claim-" + std::to_string(i), state.Context(s));
      }
      p.claims.push_back(std::move(c));
    }
    ++result.arrived;
    if (!p.claims.empty()) ++result.gpu_pods_arrived;
    if (!bind(i, a.at)) {
      result.stranded_at_rejection.push_back(1 - result.allocated_gpus / result.capacity_gpus);
      if (drop_unplaced) {
        state.Drop(&p);
      } else {
        pending.push_back(i);
      }
    }
    result.curve.push_back({result.demand_gpus, result.allocated_gpus, a.at});
  }
  result.pending = static_cast<int>(pending.size());
  result.placed = result.arrived - result.pending -
                  (drop_unplaced ? static_cast<int>(result.stranded_at_rejection.size()) : 0);
  result.gpu_pods_placed = result.gpu_pods_arrived - (result.arrived - result.placed);
  return result;
}

}  // namespace gpuadmit
