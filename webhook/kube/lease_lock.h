// LeaseLock: the leader election record kept on a coordination.k8s.io/v1 Lease, read and written
// through the API with optimistic concurrency on metadata.resourceVersion, as client-go's
// resourcelock.LeaseLock keeps it. The holder's address (where the other replicas forward
// reviews) rides along as the annotation gpuadmit.io/leader-address.
//
//   LeaseLock lock(client, "gpuadmit", "gpuadmit");
//   auto read = lock.Get();                        // read.value().found, .record, .version
//   auto wrote = lock.Update(record, read.value().version);  // kConflict: someone wrote first
//
// Thread safety: one thread at a time (the elector's), as the KubeClient it uses.
#pragma once

#include <string>

#include "core/result.h"
#include "webhook/kube/kube_client.h"

namespace gpuadmit {

inline constexpr std::string_view kLeaderAddressAnnotation = "gpuadmit.io/leader-address";

struct LeaderRecord {
  std::string holder;        // spec.holderIdentity; empty: nobody (released)
  int lease_duration_s = 0;  // spec.leaseDurationSeconds
  std::string acquire_time;  // spec.acquireTime, RFC 3339 with microseconds
  std::string renew_time;    // spec.renewTime
  int transitions = 0;       // spec.leaseTransitions
  std::string address;       // HOST:PORT of the holder, from the annotation

  bool operator==(const LeaderRecord&) const = default;
};

// "2026-11-25T14:00:00.123456Z": a Lease's MicroTime.
std::string MicroTimeNow();

class LeaseLock {
 public:
  LeaseLock(KubeClient& api, std::string ns, std::string name)
      : api_(api), ns_(std::move(ns)), name_(std::move(name)) {}

  struct Read {
    bool found = false;
    LeaderRecord record;
    std::string version;  // metadata.resourceVersion
  };
  enum class Write { kOk, kConflict };

  // The Lease, or found = false when there is none (404). Error: transport, other statuses.
  Result<Read> Get();
  // Creates the Lease holding `record`; kConflict when another replica created it first (409).
  Result<Write> Create(const LeaderRecord& record);
  // Replaces the record of the Lease at `version`; kConflict when it changed since (409).
  Result<Write> Update(const LeaderRecord& record, const std::string& version);

  const std::string& name() const { return name_; }
  const std::string& ns() const { return ns_; }

 private:
  std::string Path(bool with_name) const;
  std::string Body(const LeaderRecord& record, const std::string& version) const;
  Result<Write> Written(Result<KubeResponse> response, std::string_view what);

  KubeClient& api_;
  std::string ns_;
  std::string name_;
};

}  // namespace gpuadmit
