#include "webhook/queue/queue_support.h"

namespace gpuadmit {

std::string QueueSupport::Check(const Policy& policy) {
  if (!policy.queue.enabled) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (client_ == nullptr) {
    return "queue.enabled needs the Kubernetes API: the leader lifts scheduling gates by "
           "patching pods, and serve --cluster FILE has no API to patch";
  }
  if (!version_) {
    auto read = ReadServerVersion(*client_);
    if (!read.ok()) {
      return "queue.enabled needs Kubernetes 1.30 or newer, and the API server's version could "
             "not be read: " +
             read.error().message;
    }
    version_ = read.value();
  }
  if (!version_->AtLeast(1, 30)) {
    return "queue.enabled needs Kubernetes 1.30 or newer (Pod scheduling readiness is GA there); "
           "the API server is " +
           (version_->git.empty()
                ? std::to_string(version_->major) + "." + std::to_string(version_->minor)
                : version_->git) +
           "; leave the queue off on this cluster";
  }
  return "";
}

}  // namespace gpuadmit
