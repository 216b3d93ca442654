#include "tests/fakes/fake_lease_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace gpuadmit::testing {
namespace {

using nlohmann::json;
using Reply = FakeLeaseStore::Reply;

constexpr char kApiVersion[] = "coordination.k8s.io/v1";
constexpr char kKind[] = "Lease";

// The apiserver's Status for an error; `details` as it fills them in for the reason.
Reply Failure(int code, const std::string& reason, const std::string& message,
              json details = nullptr) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!details.is_null()) status["details"] = std::move(details);
  status["code"] = code;
  return {code, std::move(status)};
}

// What NotFound, AlreadyExists and Conflict say of the Lease they are about.
json LeaseDetails(const std::string& name) {
  return {{"name", name}, {"group", "coordination.k8s.io"}, {"kind", "leases"}};
}

std::string Qualified(const std::string& name) {
  return "leases.coordination.k8s.io \"" + name + "\"";
}

Reply BadRequest(const std::string& message) { return Failure(400, "BadRequest", message); }

// RFC 3339 in seconds, as the apiserver writes creationTimestamp.
std::string Now() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// Decodes a request body into `lease` as the apiserver's decoder and its namespace check do,
// defaulting kind, apiVersion and the namespace. An error's reply, or nullopt.
std::optional<Reply> Decode(const std::string& body, const std::string& ns, json& lease) {
  lease = json::parse(body, nullptr, false);
  if (!lease.is_object() || (lease.contains("metadata") && !lease["metadata"].is_object())) {
    return BadRequest("couldn't get version/kind; json parse error: not a Lease object");
  }
  std::string api_version = StringAt(lease, "apiVersion");
  if (!api_version.empty() && api_version != kApiVersion) {
    return BadRequest("the API version in the data (" + api_version +
                      ") does not match the expected API version (" + kApiVersion + ")");
  }
  std::string kind = StringAt(lease, "kind");
  if (!kind.empty() && kind != kKind) {
    return BadRequest("no kind \"" + kind + "\" is registered for version \"" + kApiVersion + "\"");
  }
  json& metadata = lease["metadata"];
  if (metadata.is_null()) metadata = json::object();
  std::string body_ns = StringAt(metadata, "namespace");
  if (!body_ns.empty() && body_ns != ns) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  lease["apiVersion"] = kApiVersion;
  lease["kind"] = kKind;
  metadata["namespace"] = ns;
  return std::nullopt;
}

}  // namespace

Reply FakeLeaseStore::Get(const std::string& ns, const std::string& name) const {
  auto it = leases_.find({ns, name});
  if (it == leases_.end()) {
    return Failure(404, "NotFound", Qualified(name) + " not found", LeaseDetails(name));
  }
  return {200, it->second};
}

Reply FakeLeaseStore::Create(const std::string& ns, const std::string& body) {
  json lease;
  if (auto error = Decode(body, ns, lease)) return *error;
  json& metadata = lease["metadata"];
  std::string name = StringAt(metadata, "name");
  if (name.empty()) {
    const std::string required = "Required value: name or generateName is required";
    json causes = json::array(
        {{{"reason", "FieldValueRequired"}, {"message", required}, {"field", "metadata.name"}}});
    return Failure(422, "Invalid",
                   "Lease.coordination.k8s.io \"\" is invalid: metadata.name: " + required,
                   {{"group", "coordination.k8s.io"}, {"kind", kKind}, {"causes", causes}});
  }
  if (!StringAt(metadata, "resourceVersion").empty()) {
    const std::string cause = "resourceVersion should not be set on objects to be created";
    return Failure(500, "InternalError", "Internal error occurred: " + cause,
                   {{"causes", json::array({{{"message", cause}}})}});
  }
  if (leases_.count({ns, name}) != 0) {
    return Failure(409, "AlreadyExists", Qualified(name) + " already exists", LeaseDetails(name));
  }
  char uid[40];
  std::snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012llu",
                static_cast<unsigned long long>(++created_));
  metadata["uid"] = uid;
  metadata["creationTimestamp"] = Now();
  metadata["resourceVersion"] = FreshResourceVersion();
  leases_[{ns, name}] = lease;
  return {201, std::move(lease)};
}

Reply FakeLeaseStore::Update(const std::string& ns, const std::string& name,
                             const std::string& body) {
  json lease;
  if (auto error = Decode(body, ns, lease)) return *error;
  json& metadata = lease["metadata"];
  std::string body_name = StringAt(metadata, "name");
  if (body_name != name) {
    return BadRequest("the name of the object (" + body_name +
                      ") does not match the name on the URL (" + name + ")");
  }
  auto it = leases_.find({ns, name});
  if (it == leases_.end()) {
    return Failure(404, "NotFound", Qualified(name) + " not found", LeaseDetails(name));
  }
  const json& stored = it->second["metadata"];
  std::string precondition = StringAt(metadata, "resourceVersion");
  if (!precondition.empty() && precondition != StringAt(stored, "resourceVersion")) {
    return Failure(409, "Conflict",
                   "Operation cannot be fulfilled on " + Qualified(name) +
                       ": the object has been modified; please apply your changes to the latest "
                       "version and try again",
                   LeaseDetails(name));
  }
  for (const char* kept : {"uid", "creationTimestamp", "resourceVersion"}) {
    if (stored.contains(kept)) {
      metadata[kept] = stored[kept];
    } else {
      metadata.erase(kept);
    }
  }
  if (lease != it->second) metadata["resourceVersion"] = FreshResourceVersion();
  it->second = lease;
  return {200, std::move(lease)};
}

std::optional<json> FakeLeaseStore::Find(const std::string& ns, const std::string& name) const {
  auto it = leases_.find({ns, name});
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

void FakeLeaseStore::Plant(const std::string& ns, const std::string& name, json lease) {
  if (!lease.contains("apiVersion")) lease["apiVersion"] = kApiVersion;
  if (!lease.contains("kind")) lease["kind"] = kKind;
  json& metadata = lease["metadata"];
  metadata["name"] = name;
  metadata["namespace"] = ns;
  std::string resource_version = StringAt(metadata, "resourceVersion");
  if (resource_version.empty()) {
    metadata["resourceVersion"] = FreshResourceVersion();
  } else if (resource_version.find_first_not_of("0123456789") == std::string::npos &&
             resource_version.size() < 20) {  // 19 digits: below 2^64, so stoull cannot throw
    resource_version_ = std::max<uint64_t>(resource_version_, std::stoull(resource_version));
  }
  leases_[{ns, name}] = std::move(lease);
}

std::string FakeLeaseStore::FreshResourceVersion() { return std::to_string(++resource_version_); }

}  // namespace gpuadmit::testing
