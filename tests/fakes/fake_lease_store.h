// FakeLeaseStore: coordination.k8s.io/v1 Leases kept as the kube-apiserver's registry keeps them,
// with no HTTP in it; FakeKubeApiServer's lease routes are thin adapters over it. What it copies
// from the apiserver (leases' registry strategy and the generic store):
//   - Create sets metadata.resourceVersion, uid, creationTimestamp and namespace; an existing name
//     is 409 AlreadyExists; a resourceVersion in the body is 500, as etcd3's store answers.
//   - Update is optimistic on resourceVersion: set and not the stored one, 409 Conflict; empty,
//     an unconditional update (leases allow it). A missing Lease is 404 (leases do not create on
//     update). uid and creationTimestamp are kept from the stored object. An update that changes
//     nothing keeps its resourceVersion, as the apiserver skips writing it.
//   - kind and apiVersion, when given, must be Lease and coordination.k8s.io/v1; the body's
//     namespace, when given, and (on update) its name must match the URL's: 400 otherwise.
// Errors come with a Status body (reason, message and details as the apiserver words them).
// spec is stored as sent: holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
// leaseTransitions are the client's to fill in.
//
//   FakeLeaseStore leases;
//   auto created = leases.Create("gpuadmit", R"({"metadata":{"name":"gpuadmit"},"spec":{}})");
//   // created.status == 201, created.body["metadata"]["resourceVersion"] == "1"
//
// Thread safety: none; FakeKubeApiServer calls it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace gpuadmit::testing {

class FakeLeaseStore {
 public:
  struct Reply {
    int status = 0;
    nlohmann::json body;  // the stored Lease, or a Status
  };

  // GET: 200 and the Lease, or 404 NotFound.
  Reply Get(const std::string& ns, const std::string& name) const;
  // POST of `body` (a Lease's JSON) to namespace `ns`: 201 and the stored Lease, or an error.
  Reply Create(const std::string& ns, const std::string& body);
  // PUT of `body` to the Lease `name` in `ns`: 200 and the stored Lease, or an error.
  Reply Update(const std::string& ns, const std::string& name, const std::string& body);

  // The stored Lease, for tests to assert on.
  std::optional<nlohmann::json> Find(const std::string& ns, const std::string& name) const;
  // Stores `lease` as `ns`/`name` (replacing any), named so; it keeps a resourceVersion it has,
  // and later fresh ones are above it when it is a number; without one it is given a fresh one.
  void Plant(const std::string& ns, const std::string& name, nlohmann::json lease);

 private:
  std::string FreshResourceVersion();

  std::map<std::pair<std::string, std::string>, nlohmann::json> leases_;  // by (ns, name)
  uint64_t resource_version_ = 0;                                         // the last one given out
  uint64_t created_ = 0;  // Leases created, for their uids
};

}  // namespace gpuadmit::testing
