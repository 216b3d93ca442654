#include "core/admission/claim_review.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/admission/mutations.h"
#include "core/dra/dra_objects.h"
#include "core/kube/mig_resource.h"
#include "core/plan/mig_fallback.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// What one `exactly` request asks for, as far as gpuadmit can read it.
struct ExactAsk {
  std::string device_class;
  int64_t count = 1;
  bool all = false;                 // allocationMode All
  SelectorFacts facts;              // the request's selectors, then its class's
  bool profile_from_class = false;  // the profile is the class's, not a selector's
};

ExactAsk ReadAsk(JsonView request, const InventorySnapshot& snapshot) {
  const DeviceAlternative a = ReadAlternatives(request).front();  // `exactly` comes first
  ExactAsk ask{a.device_class, a.count, a.all, WithClassOf(a, snapshot.device_classes())};
  ask.profile_from_class = a.selects.profile.empty() && !ask.facts.profile.empty();
  return ask;
}

// A subrequest's name, a DNS label: "2g.20gb" -> "2g-20gb".
std::string SubRequestName(std::string_view profile) {
  std::string out;
  for (char c : profile) {
    out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  }
  return out.substr(0, 63);
}

// `selectors` with the profile literal `from` (quoted either way) made `to`.
json RetargetSelectors(JsonView selectors, const std::string& from, const std::string& to) {
  json out = selectors.ToJson();
  for (json& s : out) {
    auto cel = s.find("cel");
    if (cel == s.end() || !cel->contains("expression")) continue;
    std::string text = (*cel)["expression"].get<std::string>();
    for (char quote : {'\'', '"'}) {
      std::string was = quote + from + quote;
      std::string now = quote + to + quote;
      for (size_t at = text.find(was); at != std::string::npos;
           at = text.find(was, at + now.size())) {
        text.replace(at, was.size(), now);
      }
    }
    (*cel)["expression"] = text;
  }
  return out;
}

// The DeviceClass that selects MIG devices of `profile`, or "" when the inventory has none.
std::string ClassFor(const InventorySnapshot& snapshot, const std::string& profile) {
  for (const auto& [name, cls] : snapshot.device_classes()) {
    if (cls.selects.profile == profile) return name;
  }
  return "";
}

// The `exactly` request rewritten to ask for `to` instead of `ask.facts.profile`.
json Retarget(JsonView exactly, const ExactAsk& ask, const InventorySnapshot& snapshot,
              const std::string& to) {
  json out = exactly.ToJson();
  if (!ask.profile_from_class) {
    if (exactly["selectors"].is_array()) {
      out["selectors"] = RetargetSelectors(exactly["selectors"], ask.facts.profile, to);
    }
    return out;
  }
  std::string cls = ClassFor(snapshot, to);
  if (!cls.empty()) {
    out["deviceClassName"] = cls;
    return out;
  }
  out["deviceClassName"] = kNvidiaMigClass;
  json selector = {{"cel",
                    {{"expression", Joined({"device.attributes['", kNvidiaGpuDriver,
                                            "'].profile == '", to, "'"})}}}};
  if (!out.contains("selectors")) out["selectors"] = json::array();
  out["selectors"].push_back(std::move(selector));
  return out;
}

// A node with `count` of `resource` free as DRA devices (a claim can use no other), or null.
const NodeInventory* FreeNode(const InventorySnapshot& snapshot, const std::string& resource,
                              int64_t count) {
  for (const NodeInventory* n : snapshot.NodesOffering(resource)) {  // most free first
    if (n->Free(resource) < count) return nullptr;
    if (n->facts->dra_allocatable.contains(resource)) return n;
  }
  return nullptr;
}

struct ClaimAt {
  std::string spec;      // the ResourceClaimSpec
  std::string metadata;  // the object's own metadata
};

// Whether a constraint on `request` matching kPcieRootAttribute is there already.
bool HasPcieConstraint(JsonView constraints, std::string_view request) {
  for (JsonView c : constraints.Elements()) {
    if (c["matchAttribute"].string() != kPcieRootAttribute) continue;
    JsonView requests = c["requests"];
    if (requests.size() == 0) return true;  // every request
    for (JsonView r : requests.Elements()) {
      if (r.string() == request) return true;
    }
  }
  return false;
}

void AlignPcieRoot(JsonView devices, const std::string& devices_at, const std::string& name,
                   const ExactAsk& ask, const InventorySnapshot& snapshot, ClaimDecision& d) {
  if (HasPcieConstraint(devices["constraints"], name)) {
    d.trail.push_back(name + ": a pcieRoot constraint is there already");
    return;
  }
  const auto& nodes = snapshot.nodes();
  if (std::none_of(nodes.begin(), nodes.end(), [&](const NodeInventory& n) {
        return n.facts->dra_gpus_per_pcie_root >= ask.count;
      })) {
    d.trail.push_back(Joined({name, ": no node has ", Digits(ask.count),
                              " GPUs under one PCIe root: not constrained"}));
    return;
  }
  json constraint = {{"requests", json::array({name})},
                     {"matchAttribute", std::string(kPcieRootAttribute)}};
  PatchPath at = PatchPath(devices_at) / "constraints";
  if (devices["constraints"].is_array()) {
    d.patch.Add(at / "-", std::move(constraint));
  } else {
    d.patch.Add(at, json::array({std::move(constraint)}));
  }
  d.trail.push_back(Joined({name, ": ", Digits(ask.count),
                            " GPUs kept under one PCIe root (matchAttribute ", kPcieRootAttribute,
                            ")"}));
}

}  // namespace

bool AddClaimNeeds(PodRequest& pod, JsonView pod_spec, const InventorySnapshot& snapshot) {
  if (HasManagedResource(pod.needs.effective)) return false;
  ResourceList asked;
  for (JsonView entry : pod_spec["resourceClaims"].Elements()) {
    std::string_view name = entry["resourceClaimTemplateName"].string();
    if (name.empty()) continue;  // a claim shared by name: not this pod's alone
    auto t = snapshot.claim_templates().find(Joined({pod.ns, "/", name}));
    if (t == snapshot.claim_templates().end()) continue;
    for (const std::vector<DeviceAlternative>& request : t->second.requests) {
      if (request.empty() || request.front().all) continue;
      const DeviceAlternative& first = request.front();
      std::string resource = AskedResource(WithClassOf(first, snapshot.device_classes()));
      if (!resource.empty()) asked[resource] += first.count;
    }
  }
  if (asked.empty()) return false;
  ContainerNeeds claims;
  claims.name = "(resource claims)";
  claims.field = "(resource claims)";  // no field of a pod spec: nothing is written into it
  claims.limits = asked;
  pod.needs.containers.push_back(std::move(claims));
  for (const auto& [resource, count] : asked) pod.needs.effective[resource] += count;
  pod.claims_devices = true;
  pod.constraints.needs_dra_devices = true;
  return true;
}

void KeepPodLevelChanges(Decision& d) {
  d.counts.clear();
  d.swaps.clear();
  d.env.clear();
  d.resource_defaults.clear();
  d.shm_size.clear();
}

bool IsClaimKind(const GroupVersionKind& kind) {
  return kind.group == "resource.k8s.io" &&
         (kind.kind == "ResourceClaim" || kind.kind == "ResourceClaimTemplate");
}

ClaimDecision PlanClaim(const GroupVersionKind& kind, JsonView object,
                        const InventorySnapshot& snapshot, const Policy& policy) {
  ClaimDecision d;
  const ClaimAt at = kind.kind == "ResourceClaimTemplate" ? ClaimAt{"/spec/spec", "/metadata"}
                                                          : ClaimAt{"/spec", "/metadata"};
  const std::string devices_at = at.spec + "/devices";
  JsonView devices = object.AtPointer(devices_at);
  JsonView annotations = object.AtPointer(at.metadata)["annotations"];
  bool opted_out = false;
  for (std::string_view name : {"mig-fallback", "optimize"}) {
    for (const std::string& key : policy.InputKeys(name)) {
      if (annotations[key].string() == "false") opted_out = true;
    }
  }
  std::vector<std::pair<std::string, std::string>> notes;  // annotations to write
  std::string chosen_lists;  // for <prefix>/first-available
  std::string fallbacks;     // for <prefix>/fallback
  size_t index = 0;
  for (JsonView request : devices["requests"].Elements()) {
    const size_t i = index++;
    const std::string name(request["name"].string());
    JsonView exactly = request["exactly"];
    if (!exactly.is_object()) {
      d.trail.push_back(name + ": written as firstAvailable: left as written");
      continue;
    }
    ExactAsk ask = ReadAsk(request, snapshot);
    AppendAll(d.asked, {d.asked.empty() ? "" : "; ", name, ": ", ask.device_class,
                        ask.facts.profile.empty() ? "" : " ", ask.facts.profile, " x",
                        ask.all ? std::string("all") : std::to_string(ask.count)});
    if (ask.all) {
      d.trail.push_back(name + ": allocationMode All: left as written");
      continue;
    }
    const PatchPath request_at = PatchPath(devices_at) / "requests" / i;
    if (ask.facts.type == "gpu") {
      if (policy.dra.align_pcie_root && ask.count > 1) {
        AlignPcieRoot(devices, devices_at, name, ask, snapshot, d);
      }
      continue;
    }
    if (ask.facts.type != "mig" || ask.facts.profile.empty()) {
      d.trail.push_back(name + ": " + ask.device_class + ": no MIG profile read: left as written");
      continue;
    }
    const std::string& profile = ask.facts.profile;
    if (!policy.mig.fallback || opted_out) {
      d.trail.push_back(name + ": MIG fallback off: left as written");
      continue;
    }
    std::string source;
    std::vector<std::string> order = MigFallbackOrder(snapshot, policy, profile, &source);
    std::string chain;
    for (const std::string& p : order) AppendAll(chain, {chain.empty() ? "" : ", ", p});
    d.trail.push_back(Joined({name, ": mig ", profile, " x", Digits(ask.count), ", chain ",
                              chain.empty() ? std::string("(none)") : chain, " (", source, ")"}));
    if (order.empty()) continue;
    if (policy.dra.first_available) {
      json list = json::array();
      json first = exactly.ToJson();
      first["name"] = SubRequestName(profile);
      list.push_back(std::move(first));
      std::string written = profile;
      for (const std::string& to : order) {
        if (list.size() == kMaxSubRequests) break;
        json sub = Retarget(exactly, ask, snapshot, to);
        sub["name"] = SubRequestName(to);
        list.push_back(std::move(sub));
        written += "," + to;
      }
      d.patch.Remove(request_at / "exactly");
      d.patch.Add(request_at / "firstAvailable", std::move(list));
      d.trail.push_back(name + ": firstAvailable " + written);
      AppendAll(chosen_lists, {chosen_lists.empty() ? "" : "; ", name, ": ", written});
      continue;
    }
    const std::string resource = std::string(kMigResourcePrefix) + profile;
    if (const NodeInventory* node = FreeNode(snapshot, resource, ask.count)) {
      d.trail.push_back(Joined({name, ": ", resource, " x", Digits(ask.count), ": free on ",
                                node->name()}));
      continue;
    }
    auto to = std::find_if(order.begin(), order.end(), [&](const std::string& p) {
      return FreeNode(snapshot, std::string(kMigResourcePrefix) + p, ask.count) != nullptr;
    });
    if (to == order.end()) {
      d.tally.Mark(DecisionPoint::kMigExhausted);
      d.warnings.push_back(Joined({"gpuadmit: claim request ", name, ": ", profile,
                                   " is free on no node, and no fallback is either; left as ",
                                   "written"}));
      continue;
    }
    d.patch.Add(request_at / "exactly", Retarget(exactly, ask, snapshot, *to));
    d.tally.Mark(DecisionPoint::kMigFallback);
    d.tally.fallbacks.push_back({profile, *to});
    d.trail.push_back(Joined({name, ": ", profile, " free on no node: falls back to ", *to}));
    AppendAll(fallbacks, {fallbacks.empty() ? "" : ",", profile, "->", *to});
  }
  if (!chosen_lists.empty()) notes.emplace_back(policy.Annotation("first-available"), chosen_lists);
  if (!fallbacks.empty()) {
    notes.emplace_back(policy.Annotation("fallback"), fallbacks);
    d.warnings.push_back("gpuadmit: claim falls back " + fallbacks +
                         " (requested MIG profile free on no node)");
  }
  SetAnnotations(object, at.metadata, notes, d.patch);
  return d;
}

}  // namespace gpuadmit
