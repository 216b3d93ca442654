#include "core/admission/claim_steering.h"

#include <cstdio>
#include <optional>

#include "core/admission/mutations.h"
#include "core/dra/device_choice.h"
#include "core/dra/dra_objects.h"
#include "core/kube/requirements.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

std::string Fixed2(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// The node the owner's admission counted a DRA-backed resource on, "" for none.
std::string OwnerNode(const std::vector<Claim>& owner_claims) {
  for (const Claim& c : owner_claims) {
    if (IsManagedResource(c.resource)) return c.node;
  }
  return "";
}

// `sub` with a selector naming `gpu` as the device's GPU.
json Pinned(json sub, const std::string& base_name, const SelectorFacts& facts,
            const std::string& gpu) {
  std::string attribute = facts.type == "gpu" ? "uuid" : "parentUUID";
  json selector = {{"cel",
                    {{"expression", Joined({"device.attributes['", kNvidiaGpuDriver, "'].",
                                            attribute, " == '", gpu, "'"})}}}};
  if (!sub.contains("selectors") || !sub["selectors"].is_array()) sub["selectors"] = json::array();
  sub["selectors"].push_back(std::move(selector));
  sub["name"] = (base_name + "-steered").substr(0, 63);
  return sub;
}

}  // namespace

std::string ClaimOwnerPod(JsonView claim) {
  JsonView metadata = claim["metadata"];
  for (JsonView owner : metadata["ownerReferences"].Elements()) {
    if (owner["kind"].string() == "Pod" && owner["apiVersion"].string() == "v1") {
      return Joined({metadata["namespace"].string(), "/", owner["name"].string()});
    }
  }
  return "";
}

ClaimDecision SteerClaim(JsonView claim, const InventorySnapshot& snapshot, const Policy& policy,
                         const std::vector<Claim>& owner_claims) {
  ClaimDecision d;
  const std::string node = OwnerNode(owner_claims);
  std::string steered;  // for <prefix>/steered-to
  size_t index = 0;
  for (JsonView request : claim.At({"spec", "devices", "requests"}).Elements()) {
    const size_t i = index++;
    const std::string name(request["name"].string());
    const bool exactly = request["exactly"].is_object();
    std::vector<DeviceAlternative> alternatives = ReadAlternatives(request);
    if (!alternatives.empty() && !alternatives.front().selects.gpu.empty()) {
      d.trail.push_back(name + ": pinned to a GPU already");
      continue;
    }
    if (alternatives.size() >= kMaxSubRequests) {
      d.trail.push_back(name + ": firstAvailable is full: not steered");
      continue;
    }
    size_t k = 0;
    for (; k < alternatives.size(); ++k) {
      const DeviceAlternative& a = alternatives[k];
      if (a.all || a.count != 1) break;
      SelectorFacts facts = WithClassOf(a, snapshot.device_classes());
      std::optional<GpuChoice> choice = ChooseGpu(snapshot.dra_devices(), facts, node);
      if (!choice) continue;
      const PatchPath at = PatchPath("/spec/devices/requests") / i;
      JsonView sub = exactly ? request["exactly"] : request["firstAvailable"][k];
      std::string sub_name(exactly ? name : sub["name"].string());
      json pinned = Pinned(sub.ToJson(), sub_name, facts, choice->gpu);
      if (exactly) {  // written exactly: the request as written follows, as a subrequest
        json as_written = sub.ToJson();
        as_written["name"] = sub_name;
        d.patch.Remove(at / "exactly");
        d.patch.Add(at / "firstAvailable", json::array({std::move(pinned), std::move(as_written)}));
      } else {
        d.patch.Add(at / "firstAvailable" / size_t{0}, std::move(pinned));
      }
      std::string gpu = choice->gpu_device.empty() ? choice->gpu : choice->gpu_device;
      AppendAll(steered, {steered.empty() ? "" : "; ", name, ": ", choice->node, "/", gpu});
      d.trail.push_back(Joined(
          {name, ": ", sub_name, " steered to ", choice->node, "/", gpu, " (",
           choice->gpu, "): the allocator's first fit there takes ", choice->device,
           ", which lowers what could still be carved (each profile alone, in GPU equivalents) by ",
           Fixed2(choice->lost), ", the least of ", Digits(static_cast<int64_t>(choice->gpus)),
           " GPUs; unsteered it would take ", choice->first_fit_device, ", lowering it by ",
           Fixed2(choice->first_fit_lost)}));
      break;
    }
    if (k == alternatives.size()) {
      d.trail.push_back(name + (node.empty() ? std::string() : " on " + node) +
                        ": no GPU with shared counters can take it: not steered");
    } else if (alternatives[k].all || alternatives[k].count != 1) {
      d.trail.push_back(name + ": asks more than one device: not steered");
    }
  }
  if (!steered.empty()) {
    SetAnnotations(claim, "/metadata", {{policy.Annotation("steered-to"), steered}}, d.patch);
  }
  return d;
}

}  // namespace gpuadmit
