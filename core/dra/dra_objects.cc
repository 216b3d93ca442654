#include "core/dra/dra_objects.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/kube/mig_resource.h"
#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

// An attribute's value as text: string, int or version (bool reads as "true"/"false").
// Attribute names are read qualified ("gpu.nvidia.com/type") or bare ("type": the driver's own).
std::string Attribute(JsonView attributes, std::string_view driver, std::string_view name) {
  JsonView value = attributes[name];
  if (!value.present()) value = attributes[std::string(driver) + "/" + std::string(name)];
  if (value["string"].is_string()) return std::string(value["string"].string());
  if (value["version"].is_string()) return std::string(value["version"].string());
  if (value["int"].is_number_integer()) return std::to_string(value["int"].integer());
  if (value["bool"].is_boolean()) return value["bool"].boolean() ? "true" : "false";
  return "";
}

// A counter's amount in thousandths; 0 for one unreadable or below zero (the API allows none).
int64_t Milli(JsonView quantity) {
  auto milli = ParseQuantityMilli(quantity["value"].string());
  return milli.ok() && milli.value() > 0 ? milli.value() : 0;
}

// {counters: {name: {value}}} -> name -> thousandths.
std::map<std::string, int64_t> Counters(JsonView counters) {
  std::map<std::string, int64_t> out;
  for (const JsonView::Member& c : counters.Members()) out[std::string(c.key)] = Milli(c.value);
  return out;
}

DraDevice ReadDevice(JsonView d, std::string_view driver, std::string_view slice_node) {
  DraDevice device;
  device.name = d["name"].string();
  std::string_view own_node = d["nodeName"].string();
  device.node = own_node.empty() ? slice_node : own_node;
  JsonView attributes = d["attributes"];
  device.type = Attribute(attributes, driver, "type");
  device.profile = Attribute(attributes, driver, "profile");
  device.product = Attribute(attributes, driver, "productName");
  device.pcie_root = Attribute(attributes, driver, kPcieRootAttribute);
  device.uuid = Attribute(attributes, driver, "uuid");
  device.parent_uuid = Attribute(attributes, driver, "parentUUID");
  JsonView memory = d["capacity"]["memory"];
  if (!memory.present()) memory = d["capacity"][std::string(driver) + "/memory"];
  if (auto mib = ParseMemoryMib(memory["value"].string()); mib.ok()) {
    device.memory_mib = mib.value();
  }
  for (JsonView use : d["consumesCounters"].Elements()) {
    device.consumes[std::string(use["counterSet"].string())] = Counters(use["counters"]);
  }
  return device;
}

// The quoted string `field` is compared to with `==` in `cel`: `x.field == 'v'` or
// `x['field'] == "v"`; nullopt when there is none.
std::optional<std::string> ComparedTo(std::string_view cel, std::string_view field) {
  for (size_t at = cel.find(field); at != std::string_view::npos;
       at = cel.find(field, at + field.size())) {
    char before = at == 0 ? ' ' : cel[at - 1];
    if (before != '.' && before != '\'' && before != '"') continue;
    size_t i = at + field.size();
    if (before != '.') {  // ['field']: the closing quote and bracket
      if (i >= cel.size() || cel[i] != before) continue;
      ++i;
      if (i >= cel.size() || cel[i] != ']') continue;
      ++i;
    } else if (i < cel.size() &&
               (std::isalnum(static_cast<unsigned char>(cel[i])) != 0 || cel[i] == '_')) {
      continue;  // a longer name: .typeName is not .type
    }
    while (i < cel.size() && cel[i] == ' ') ++i;
    if (cel.substr(i, 2) != "==") continue;
    i += 2;
    while (i < cel.size() && cel[i] == ' ') ++i;
    if (i >= cel.size() || (cel[i] != '\'' && cel[i] != '"')) continue;
    char quote = cel[i];
    size_t end = cel.find(quote, i + 1);
    if (end == std::string_view::npos) continue;
    return std::string(cel.substr(i + 1, end - i - 1));
  }
  return std::nullopt;
}

// The DeviceClass named by the request `name` of `requests` (spec.devices.requests); a
// firstAvailable entry's result names "<request>/<entry>".
std::string_view ClassOfRequest(JsonView requests, std::string_view name) {
  std::string_view entry;
  if (size_t slash = name.find('/'); slash != std::string_view::npos) {
    entry = name.substr(slash + 1);
    name = name.substr(0, slash);
  }
  for (JsonView request : requests.Elements()) {
    if (request["name"].string() != name) continue;
    if (entry.empty()) return request["exactly"]["deviceClassName"].string();
    for (JsonView sub : request["firstAvailable"].Elements()) {
      if (sub["name"].string() == entry) return sub["deviceClassName"].string();
    }
  }
  return {};
}

}  // namespace

void ReadSelector(std::string_view cel, SelectorFacts& facts) {
  auto fill = [&](std::string& slot, std::string_view field) {
    if (!slot.empty()) return;
    if (auto v = ComparedTo(cel, field)) slot = std::move(*v);
  };
  fill(facts.driver, "driver");
  fill(facts.type, "type");
  fill(facts.profile, "profile");
  fill(facts.product, "productName");
  fill(facts.gpu, "parentUUID");
  fill(facts.gpu, "uuid");
}

void ReadSelectors(JsonView selectors, SelectorFacts& facts) {
  for (JsonView s : selectors.Elements()) ReadSelector(s["cel"]["expression"].string(), facts);
}

ResourceSliceRecord ReadResourceSlice(JsonView slice) {
  ResourceSliceRecord r;
  r.name = slice["metadata"]["name"].string();
  JsonView spec = slice["spec"];
  r.driver = spec["driver"].string();
  r.pool = spec["pool"]["name"].string();
  r.generation = spec["pool"]["generation"].integer();
  r.node = spec["nodeName"].string();
  for (JsonView d : spec["devices"].Elements()) {
    r.devices.push_back(ReadDevice(d, r.driver, r.node));
  }
  for (JsonView set : spec["sharedCounters"].Elements()) {
    r.counters[std::string(set["name"].string())] = Counters(set["counters"]);
  }
  return r;
}

ResourceClaimRecord ReadResourceClaim(JsonView claim) {
  ResourceClaimRecord r;
  auto [name_space, name] = claim["metadata"].Fields({"namespace", "name"});
  r.key = std::string(name_space.string()) + "/" + std::string(name.string());
  const bool for_extended_resource =
      claim["metadata"]["annotations"][kExtendedResourceClaimAnnotation].string() == "true";
  for (JsonView owner : claim["metadata"]["ownerReferences"].Elements()) {
    if (owner["kind"].string() == "Pod" && owner["apiVersion"].string() == "v1") {
      r.owner_pod = std::string(name_space.string()) + "/" + std::string(owner["name"].string());
    }
  }
  JsonView requests = claim.At({"spec", "devices", "requests"});
  for (JsonView result : claim.At({"status", "allocation", "devices", "results"}).Elements()) {
    r.allocated.push_back({std::string(result["driver"].string()),
                           std::string(result["pool"].string()),
                           std::string(result["device"].string())});
    if (for_extended_resource) {
      r.extended_resource_classes.emplace_back(
          ClassOfRequest(requests, result["request"].string()));
    }
  }
  if (!r.allocated.empty()) return r;
  for (JsonView request : requests.Elements()) {
    std::vector<DeviceAlternative> alternatives = ReadAlternatives(request);
    if (alternatives.empty() || alternatives.front().selects.gpu.empty()) continue;
    r.pinned.push_back(std::move(alternatives.front()));
  }
  return r;
}

DeviceClassRecord ReadDeviceClass(JsonView device_class) {
  DeviceClassRecord r;
  r.name = device_class["metadata"]["name"].string();
  JsonView spec = device_class["spec"];
  r.extended_resource = spec["extendedResourceName"].string();
  ReadSelectors(spec["selectors"], r.selects);
  return r;
}

std::vector<DeviceAlternative> ReadAlternatives(JsonView request) {
  auto read = [](JsonView r) {
    DeviceAlternative a;
    a.device_class = r["deviceClassName"].string();
    a.all = r["allocationMode"].string() == "All";
    if (r["count"].is_number_integer()) a.count = std::max<int64_t>(1, r["count"].integer());
    ReadSelectors(r["selectors"], a.selects);
    return a;
  };
  std::vector<DeviceAlternative> out;
  if (request["exactly"].is_object()) out.push_back(read(request["exactly"]));
  for (JsonView sub : request["firstAvailable"].Elements()) out.push_back(read(sub));
  return out;
}

ClaimTemplateRecord ReadClaimTemplate(JsonView claim_template) {
  ClaimTemplateRecord r;
  auto [name_space, name] = claim_template["metadata"].Fields({"namespace", "name"});
  r.key = std::string(name_space.string()) + "/" + std::string(name.string());
  for (JsonView request : claim_template.At({"spec", "spec", "devices", "requests"}).Elements()) {
    r.requests.push_back(ReadAlternatives(request));
  }
  return r;
}

SelectorFacts WithClass(SelectorFacts selects, std::string_view class_name,
                        const DeviceClassRecord* device_class) {
  if (device_class != nullptr) {
    const SelectorFacts& c = device_class->selects;
    for (auto [slot, value] : {std::pair{&selects.driver, &c.driver},
                               std::pair{&selects.type, &c.type},
                               std::pair{&selects.profile, &c.profile},
                               std::pair{&selects.product, &c.product}}) {
      if (slot->empty()) *slot = *value;
    }
  }
  if (selects.type.empty()) {
    if (class_name == kNvidiaMigClass || !selects.profile.empty()) selects.type = "mig";
    if (class_name == kNvidiaGpuClass) selects.type = "gpu";
  }
  return selects;
}

SelectorFacts WithClassOf(const DeviceAlternative& alternative,
                          const std::map<std::string, DeviceClassRecord, std::less<>>& classes) {
  auto cls = classes.find(alternative.device_class);
  return WithClass(alternative.selects, alternative.device_class,
                   cls == classes.end() ? nullptr : &cls->second);
}

std::string AskedResource(const SelectorFacts& facts) {
  if (!facts.driver.empty() && facts.driver != kNvidiaGpuDriver) return "";
  return DeviceResource(kNvidiaGpuDriver, DraDevice{.type = facts.type, .profile = facts.profile});
}

std::string DeviceResource(std::string_view driver, const DraDevice& device) {
  if (driver != kNvidiaGpuDriver) return "";
  if (device.type == "gpu") return "nvidia.com/gpu";
  if (device.type == "mig" && !device.profile.empty()) {
    return std::string(kMigResourcePrefix) + device.profile;
  }
  return "";
}

bool Selects(const SelectorFacts& facts, std::string_view driver, const DraDevice& device) {
  auto matches = [](const std::string& want, const std::string& have) {
    return want.empty() || want == have;
  };
  return matches(facts.driver, std::string(driver)) && matches(facts.type, device.type) &&
         matches(facts.profile, device.profile) && matches(facts.product, device.product) &&
         matches(facts.gpu, GpuOf(device));
}

std::string ProductLabelOf(std::string_view product_name) {
  std::string out(product_name);
  for (char& c : out) {
    if (c == ' ') c = '-';
  }
  return out;
}

}  // namespace gpuadmit
