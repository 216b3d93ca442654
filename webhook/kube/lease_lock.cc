#include "webhook/kube/lease_lock.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "core/json/json_fields.h"
#include "core/json/json_reader.h"

namespace gpuadmit {
namespace {

// The integer at `path`, or 0 when it is absent or not an integer.
int IntAt(const nlohmann::json& from, std::initializer_list<std::string_view> path) {
  const nlohmann::json& v = At(from, path);
  return v.is_number_integer() ? v.get<int>() : 0;
}

// "Operation cannot be fulfilled ..." from a Status body, or the body's start.
std::string StatusMessage(const KubeResponse& r) {
  auto doc = ParseJson(r.body);
  if (doc.ok() && doc.value().is_object()) {
    std::string message = StringAt(doc.value(), {"message"});
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
  Read read;
  read.found = true;
  read.version = StringAt(lease, {"metadata", "resourceVersion"});
  read.record.holder = StringAt(lease, {"spec", "holderIdentity"});
  read.record.lease_duration_s = IntAt(lease, {"spec", "leaseDurationSeconds"});
  read.record.acquire_time = StringAt(lease, {"spec", "acquireTime"});
  read.record.renew_time = StringAt(lease, {"spec", "renewTime"});
  read.record.transitions = IntAt(lease, {"spec", "leaseTransitions"});
  read.record.address = StringAt(lease, {"metadata", "annotations", kLeaderAddressAnnotation});
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
