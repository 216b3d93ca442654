// QueueSupport: whether the capacity queue a policy enables can work where serve runs, asked
// by the policy source at start and at every reload (PolicyFileSource::SetServable). The queue
// needs the Kubernetes API (the leader lifts gates by patching pods; `serve --cluster FILE` has
// no API) and Kubernetes 1.30 or newer: scheduling gates are GA there (beta, on by default,
// since 1.27, where gated pods' node affinity also became mutable; a cluster older than 1.30 may
// have the feature turned off, and the apiserver would then drop the gate silently). The API
// server's version is read once, when a policy first enables the queue.
//
//   QueueSupport support(std::move(client));  // null: no Kubernetes API
//   policy.SetServable([&](const Policy& p) { return support.Check(p); });
//
// Thread safety: Check from any thread (one GET at a time, under a lock).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/policy/policy.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/server_version.h"

namespace gpuadmit {

class QueueSupport {
 public:
  explicit QueueSupport(std::unique_ptr<KubeClient> client) : client_(std::move(client)) {}

  // "" when `policy` leaves the queue off, or it can work here; else why not, one line.
  std::string Check(const Policy& policy);

 private:
  std::mutex mu_;  // guards what follows
  std::unique_ptr<KubeClient> client_;
  std::optional<ServerVersion> version_;  // once read
};

}  // namespace gpuadmit
