#include "webhook/kube/lease_lock.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/json/json_reader.h"

namespace gpuadmit {
namespace {

std::string StringAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int IntAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// "Operation cannot be fulfilled ..." from a Status body, or the body's start.
std::string StatusMessage(const KubeResponse& r) {
  auto doc = ParseJson(r.body);
  if (doc.ok() && doc.value().is_object()) {
    std::string message = StringAt(doc.value(), "message");
    if (!message.empty()) return message;
  }
  return r.body.substr(0, 200);
}

}  // namespace

std::string MicroTimeNow() {
  auto now = std::chrono::system_clock::now();
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros % 1000000);
}

std::string LeaseLock::Path(bool with_name) const {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases";
  if (with_name) path += "/" + name_;
  return path;
}

std::string LeaseLock::Body(const LeaderRecord& record, const std::string& version) const {
  nlohmann::json metadata = {{"name", name_}, {"namespace", ns_}};
  if (!version.empty()) metadata["resourceVersion"] = version;
  if (!record.address.empty()) {
    metadata["annotations"] = {{std::string(kLeaderAddressAnnotation), record.address}};
  }
  nlohmann::json spec = {{"holderIdentity", record.holder},
                         {"leaseDurationSeconds", record.lease_duration_s},
                         {"leaseTransitions", record.transitions}};
  if (!record.acquire_time.empty()) spec["acquireTime"] = record.acquire_time;
  if (!record.renew_time.empty()) spec["renewTime"] = record.renew_time;
  nlohmann::json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                          {"kind", "Lease"},
                          {"metadata", std::move(metadata)},
                          {"spec", std::move(spec)}};
  return lease.dump();
}

Result<LeaseLock::Read> LeaseLock::Get() {
  auto response = api_.Send("GET", Path(true));
  if (!response.ok()) return response.error();
  const KubeResponse& r = response.value();
  if (r.status == 404) return Read{};
  const std::string what = "lease " + ns_ + "/" + name_;
  if (r.status != 200) {
    return Error{fmt::format("GET {}: HTTP {}: {}", what, r.status, StatusMessage(r))};
  }
  auto doc = ParseJson(r.body);
  if (!doc.ok()) return Error{"GET " + what + ": " + doc.error().message};
  const nlohmann::json& lease = doc.value();
  if (!lease.is_object()) return Error{"GET " + what + ": not an object"};
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& metadata = lease.contains("metadata") ? lease["metadata"] : kEmpty;
  const nlohmann::json& spec =
      lease.contains("spec") && lease["spec"].is_object() ? lease["spec"] : kEmpty;
  Read read;
  read.found = true;
  read.version = metadata.is_object() ? StringAt(metadata, "resourceVersion") : "";
  read.record.holder = StringAt(spec, "holderIdentity");
  read.record.lease_duration_s = IntAt(spec, "leaseDurationSeconds");
  read.record.acquire_time = StringAt(spec, "acquireTime");
  read.record.renew_time = StringAt(spec, "renewTime");
  read.record.transitions = IntAt(spec, "leaseTransitions");
  if (metadata.is_object() && metadata.contains("annotations") &&
      metadata["annotations"].is_object()) {
    read.record.address =
        StringAt(metadata["annotations"], std::string(kLeaderAddressAnnotation).c_str());
  }
  return read;
}

Result<LeaseLock::Write> LeaseLock::Written(Result<KubeResponse> response, std::string_view what) {
  if (!response.ok()) return response.error();
  const KubeResponse& r = response.value();
  if (r.status == 200 || r.status == 201) return Write::kOk;
  if (r.status == 409) return Write::kConflict;
  return Error{
      fmt::format("{} lease {}/{}: HTTP {}: {}", what, ns_, name_, r.status, StatusMessage(r))};
}

Result<LeaseLock::Write> LeaseLock::Create(const LeaderRecord& record) {
  return Written(api_.Send("POST", Path(false), Body(record, "")), "POST");
}

Result<LeaseLock::Write> LeaseLock::Update(const LeaderRecord& record, const std::string& version) {
  return Written(api_.Send("PUT", Path(true), Body(record, version)), "PUT");
}

}  // namespace gpuadmit
