// LeaderRouting: `serve --leader-elect`, where each review is decided when replicas elect a
// leader. The leader decides every review, so one ledger counts every reservation:
//   - the leader, a review a peer replica forwarded (Gpuadmit-Forwarded over a connection with a
//     peer's certificate; answered here even if this replica has just lost the Lease, never
//     bounced on), and dryRun reviews (they reserve nothing) are decided here;
//   - a follower forwards the rest to the address the leader published on the Lease and answers
//     with the leader's answer, unchanged;
//   - with no leader known, or a leader that does not answer within 2 s, the follower decides
//     here, degraded, on its share of the free devices (1/--leader-elect-replicas of each
//     node's, ReplicaShare): counted (gpuadmit_forward_failures_total), logged, and the answer
//     carries a warning.
//
//   auto routing = LeaderRouting::Start(settings, config, handler, metrics, log);
//   server.SetReviewRoute([&r = *routing.value()](auto type, auto body, bool forwarded,
//                                                 auto scope) {
//     return r.Route(type, body, forwarded, scope); });
//   ... routing.value()->Stop();  // at SIGTERM: the Lease released for the next leader
//
// Thread safety: Route from any thread; Start and Stop from main's.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/leader_elector.h"
#include "webhook/kube/lease_lock.h"
#include "webhook/os/clock.h"
#include "webhook/server/review_forwarder.h"
#include "webhook/telemetry/log.h"
#include "webhook/telemetry/metrics.h"

namespace gpuadmit {

struct LeaderRoutingSettings {
  std::string lease_namespace;  // --leader-election-namespace
  std::string lease_name = "gpuadmit";
  std::string identity;          // --id
  std::string advertise;         // --advertise HOST:PORT
  std::string peer_ca;           // --peer-ca: the CA of the replicas' serving certificate
  std::string tls_cert;  // --tls-cert and --tls-key: what this replica presents to the leader
  std::string tls_key;
  // The replicas' name, the first DNS name of --tls-cert (CertificateDnsName): what the leader's
  // certificate must hold. serve reads it once, for this and for the server's peer check.
  std::string peer_name;
  LeaderElectionOptions timing;  // lease duration, renew deadline, retry period
  // --leader-elect-replicas: how many replicas run. Without a leader each decides on 1/replicas
  // of every node's free devices, so together they never promise a device twice.
  int64_t replicas = 3;
};

class LeaderRouting {
 public:
  // Creates the Lease client and the forwarder and starts electing. Errors name what is wrong
  // (the CA file, the certificate's name, the API configuration).
  static Result<std::unique_ptr<LeaderRouting>> Start(const LeaderRoutingSettings& settings,
                                                      const KubeConfig& config,
                                                      AdmissionHandler& handler, Metrics& metrics,
                                                      Logger& log);
  ~LeaderRouting();

  // TlsServer's ReviewRoute: the leader's answer for a follower, or nullopt to decide here.
  std::optional<HandlerAnswer> Route(std::string_view content_type, std::string_view body,
                                     bool forwarded, std::string_view scope);
  bool IsLeader() const { return elector_->IsLeader(); }
  // Stops electing; a held Lease is released.
  void Stop() { elector_->Stop(); }

 private:
  LeaderRouting(AdmissionHandler& handler, Metrics& metrics, Logger& log)
      : handler_(handler), metrics_(metrics), log_(log) {}
  HandlerAnswer DecideHere(std::string_view content_type, std::string_view body,
                           std::string_view scope, Counter why, const std::string& reason);

  AdmissionHandler& handler_;
  Metrics& metrics_;
  Logger& log_;
  SteadyClock clock_;
  std::string identity_;
  int64_t replicas_ = 1;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<LeaseLock> lock_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<ReviewForwarder> forwarder_;
  std::atomic<int64_t> last_warned_ns_{0};  // degraded decisions log at most every 10 s
  std::atomic<uint64_t> unlogged_{0};
};

// True when the AdmissionReview's request says "dryRun": true.
bool IsDryRunReview(std::string_view body);

// The AdmissionReview answer `body` with `warning` added to response.warnings.
void AddReviewWarning(std::string& body, const std::string& warning);

}  // namespace gpuadmit
