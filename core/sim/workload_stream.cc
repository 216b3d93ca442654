#include "core/sim/workload_stream.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace gpuadmit {
namespace {

using nlohmann::json;

// Kubernetes' rand alphabet (k8s.io/apimachinery/pkg/util/rand): no vowels, no 0, 1 or 3, so a
// generated name never spells a word.
constexpr std::string_view kAlphanums = "bcdfghjklmnpqrstvwxz2456789";
// 27^5: the 5-character suffixes there are.
constexpr uint64_t kSuffixSpace = 27ull * 27 * 27 * 27 * 27;
// Not a multiple of 3, so coprime with 27^5: ordinal -> ordinal * k + c (mod 27^5) is a bijection,
// which makes the suffixes of a controller's pods distinct yet not a visible count.
constexpr uint64_t kSuffixMultiplier = 7368787;
constexpr uint64_t kSuffixOffset = 4096093;
// 150000: Kubernetes' largest supported cluster, in pods; more from one line is a typo, and
// would only exhaust memory.
constexpr int64_t kMaxPods = 150000;

const json& Field(const json& from, std::string_view key) {
  static const json kNull;
  if (!from.is_object()) return kNull;
  auto it = from.find(key);
  return it == from.end() ? kNull : *it;
}

std::string StringField(const json& from, std::string_view key) {
  const json& v = Field(from, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// Deterministic in place of Kubernetes' rand.String(5): distinct for any n below 27^5.
std::string Suffix(uint64_t n) {
  uint64_t v = ((n % kSuffixSpace) * kSuffixMultiplier + kSuffixOffset) % kSuffixSpace;
  std::string out(5, ' ');
  for (int i = 4; i >= 0; --i) {
    out[i] = kAlphanums[v % kAlphanums.size()];
    v /= kAlphanums.size();
  }
  return out;
}

// The pod-template-hash as the Deployment controller computes it (controller.ComputeHash): the
// 32-bit FNV-1a of the template, its decimal digits passed through rand.SafeEncodeString (each
// character -> kAlphanums[c % 27]). Kubernetes hashes a dump of the Go struct, which cannot be
// reproduced here, so this hashes the template's JSON (keys sorted): the same template always
// gives the same hash, not the hash a cluster would show. The decimal is zero-padded to 10
// digits, so the hash is always 10 characters (Kubernetes' is up to 10).
std::string PodTemplateHash(const json& pod_template) {
  uint32_t hash = 2166136261u;  // FNV-1a 32 offset basis
  for (unsigned char c : pod_template.dump(-1, ' ', false, json::error_handler_t::replace)) {
    hash ^= c;
    hash *= 16777619u;  // FNV-1a 32 prime
  }
  std::string digits = std::to_string(hash);
  digits.insert(0, 10 - digits.size(), '0');
  for (char& c : digits) c = kAlphanums[static_cast<unsigned char>(c) % kAlphanums.size()];
  return digits;
}

// spec.<key> as a count in [0, kMaxPods]; `fallback` when absent or null.
Result<int64_t> Count(const json& spec, std::string_view key, int64_t fallback) {
  const json& v = Field(spec, key);
  if (v.is_null()) return fallback;
  std::string field = "spec." + std::string(key);
  if (!v.is_number_integer()) return Error{field + " is not a whole number: " + v.dump()};
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kMaxPods)
                             : v.get<int64_t>() > kMaxPods) {
    return Error{field + " is " + v.dump() + ", above " + std::to_string(kMaxPods)};
  }
  int64_t n = v.get<int64_t>();
  if (n < 0) return Error{field + " is negative: " + v.dump()};
  return n;
}

// A controller as its pods see it.
struct Controller {
  std::string kind;          // "Deployment", ...
  std::string name;          // metadata.name
  std::string name_space;    // metadata.namespace, or "default"
  const json* pod_template;  // spec.template, an object with an object spec
};

json OwnerReference(std::string_view api_version, std::string_view kind, std::string_view name) {
  json ref = json::object();
  ref["apiVersion"] = api_version;
  ref["kind"] = kind;
  ref["name"] = name;
  ref["controller"] = true;
  ref["blockOwnerDeletion"] = true;
  return json::array({ref});
}

// A pod of `c`: the template's labels (plus `extra_labels`), annotations and spec.
json PodOf(const Controller& c, const std::string& name, const json& extra_labels, json owner) {
  const json& meta = Field(*c.pod_template, "metadata");
  json labels = Field(meta, "labels").is_object() ? Field(meta, "labels") : json::object();
  for (const auto& [key, value] : extra_labels.items()) labels[key] = value;
  json pod = json::object();
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"]["name"] = name;
  pod["metadata"]["namespace"] = c.name_space;
  pod["metadata"]["labels"] = std::move(labels);
  if (Field(meta, "annotations").is_object()) {
    pod["metadata"]["annotations"] = Field(meta, "annotations");
  }
  pod["metadata"]["ownerReferences"] = std::move(owner);
  pod["spec"] = Field(*c.pod_template, "spec");
  return pod;
}

Result<std::vector<json>> ExpandPod(const json& object, uint64_t seed) {
  json pod = object;
  std::string generate_name = StringField(Field(pod, "metadata"), "generateName");
  if (StringField(Field(pod, "metadata"), "name").empty()) {
    if (generate_name.empty()) return Error{"a Pod with neither metadata.name nor generateName"};
    pod["metadata"]["name"] = generate_name + Suffix(seed);
  }
  json& meta = pod["metadata"];
  if (StringField(meta, "namespace").empty()) meta["namespace"] = "default";
  if (!Field(pod, "spec").is_object()) {
    return Error{"the Pod " + meta["name"].get<std::string>() + " has no spec"};
  }
  return std::vector<json>{std::move(pod)};
}

Result<std::vector<json>> ExpandController(const json& object, const std::string& kind) {
  const json& meta = Field(object, "metadata");
  Controller c{kind, StringField(meta, "name"), StringField(meta, "namespace"), nullptr};
  if (c.name.empty()) return Error{"a " + kind + " without metadata.name"};
  if (c.name_space.empty()) c.name_space = "default";
  std::string what = "the " + kind + " " + c.name;
  const json& spec = Field(object, "spec");
  const json& pod_template = Field(spec, "template");
  if (!pod_template.is_object()) return Error{what + " has no spec.template"};
  if (!Field(pod_template, "spec").is_object()) return Error{what + " has no spec.template.spec"};
  c.pod_template = &pod_template;

  std::vector<json> pods;
  if (kind == "Job") {
    auto parallelism = Count(spec, "parallelism", 1);
    if (!parallelism.ok()) return Error{what + ": " + parallelism.error().message};
    auto completions = Count(spec, "completions", parallelism.value());
    if (!completions.ok()) return Error{what + ": " + completions.error().message};
    const json& restart = Field(Field(pod_template, "spec"), "restartPolicy");
    if (!restart.is_null() && restart != "Never" && restart != "OnFailure") {
      return Error{what + ": a Job's pods restart Never or OnFailure, not " + restart.dump()};
    }
    // A suspended Job creates no pods until it is resumed.
    int64_t n =
        Field(spec, "suspend") == true ? 0 : std::min(parallelism.value(), completions.value());
    json labels = json::object();
    labels["batch.kubernetes.io/job-name"] = c.name;
    labels["job-name"] = c.name;
    for (int64_t i = 0; i < n; ++i) {
      json pod =
          PodOf(c, c.name + "-" + Suffix(i), labels, OwnerReference("batch/v1", kind, c.name));
      if (restart.is_null()) pod["spec"]["restartPolicy"] = "Never";
      pods.push_back(std::move(pod));
    }
    return pods;
  }

  auto replicas = Count(spec, "replicas", 1);
  if (!replicas.ok()) return Error{what + ": " + replicas.error().message};
  std::string hash = kind == "Deployment" ? PodTemplateHash(pod_template) : "";
  std::string replica_set = c.name + "-" + hash;
  for (int64_t i = 0; i < replicas.value(); ++i) {
    if (kind == "Deployment") {
      json labels = json::object();
      labels["pod-template-hash"] = hash;
      pods.push_back(PodOf(c, replica_set + "-" + Suffix(i), labels,
                           OwnerReference("apps/v1", "ReplicaSet", replica_set)));
    } else if (kind == "ReplicaSet") {
      pods.push_back(PodOf(c, c.name + "-" + Suffix(i), json::object(),
                           OwnerReference("apps/v1", kind, c.name)));
    } else {  // StatefulSet
      std::string name = c.name + "-" + std::to_string(i);
      json labels = json::object();
      labels["statefulset.kubernetes.io/pod-name"] = name;
      labels["apps.kubernetes.io/pod-index"] = std::to_string(i);
      json pod = PodOf(c, name, labels, OwnerReference("apps/v1", kind, c.name));
      pod["spec"]["hostname"] = name;
      std::string service = StringField(spec, "serviceName");
      if (!service.empty()) pod["spec"]["subdomain"] = service;
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

// ExpandToPods, with `seed` naming a generateName Pod (the line number in a stream).
Result<std::vector<json>> Expand(const json& object, uint64_t seed) {
  if (!object.is_object()) return Error{"the object is not a JSON object"};
  std::string kind = StringField(object, "kind");
  std::string api_version = StringField(object, "apiVersion");
  std::string want;
  if (kind == "Pod") {
    want = "v1";
  } else if (kind == "Deployment" || kind == "ReplicaSet" || kind == "StatefulSet") {
    want = "apps/v1";
  } else if (kind == "Job") {
    want = "batch/v1";
  } else if (kind == "DaemonSet") {
    return Error{"a DaemonSet is not replayed: its pods follow nodes, not arrivals"};
  } else if (kind == "CronJob") {
    return Error{"a CronJob is not replayed: give each Job it would create, at its time"};
  } else if (kind.empty()) {
    return Error{"the object has no kind"};
  } else {
    return Error{"a " + kind +
                 " is not replayed: the object is a v1 Pod, an apps/v1 Deployment, "
                 "ReplicaSet or StatefulSet, or a batch/v1 Job"};
  }
  if (!api_version.empty() && api_version != want) {
    return Error{"a " + kind + " is " + want + ", not " + api_version};
  }
  if (kind == "Pod") return ExpandPod(object, seed);
  return ExpandController(object, kind);
}

// The line's Arrival fields and the seconds between its pods, or what is wrong with them.
struct LineTimes {
  Arrival first;
  double interval = 0;
};

Result<LineTimes> ReadLine(const json& line) {
  if (!line.is_object()) return Error{"not a JSON object"};
  Arrival a;
  const json& at = Field(line, "at");
  if (at.is_null()) return Error{"no \"at\" (seconds from the start)"};
  if (!at.is_number()) return Error{"\"at\" is not a number: " + at.dump()};
  a.at = at.get<double>();
  if (a.at < 0) return Error{"\"at\" is negative: " + at.dump()};
  const json& duration = Field(line, "duration");
  if (!duration.is_null()) {
    if (!duration.is_number()) return Error{"\"duration\" is not a number: " + duration.dump()};
    if (duration.get<double>() < 0) return Error{"\"duration\" is negative: " + duration.dump()};
    a.duration = duration.get<double>();
  }
  double interval = 0;
  if (const json& i = Field(line, "interval"); !i.is_null()) {
    if (!i.is_number() || i.get<double>() < 0) {
      return Error{"\"interval\" is not a number >= 0: " + i.dump()};
    }
    interval = i.get<double>();
  }
  if (!Field(line, "object").is_object()) return Error{"no \"object\""};
  return LineTimes{a, interval};
}

}  // namespace

Result<std::vector<nlohmann::json>> ExpandToPods(const nlohmann::json& object) {
  return Expand(object, 0);
}

Result<std::vector<Arrival>> ParseWorkloadStream(std::string_view text) {
  std::vector<Arrival> arrivals;
  uint64_t line_number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;

    std::string where = "line " + std::to_string(line_number) + ": ";
    json parsed = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return Error{where + "not JSON"};
    auto arrival = ReadLine(parsed);
    if (!arrival.ok()) return Error{where + arrival.error().message};
    auto pods = Expand(Field(parsed, "object"), line_number);
    if (!pods.ok()) return Error{where + pods.error().message};
    const LineTimes& times = arrival.value();
    for (size_t i = 0; i < pods.value().size(); ++i) {
      arrivals.push_back({times.first.at + static_cast<double>(i) * times.interval,
                          times.first.duration, std::move(pods.value()[i])});
    }
  }
  return arrivals;
}

}  // namespace gpuadmit
