// The Kubernetes Event (core/v1) the leader posts on a pod whose capacity gate it lifts without
// capacity: its timeout came (reason CapacityWaitTimedOut), or no node it may use could ever
// hold it (CapacityUnplaceable). Both are Warnings: `kubectl describe pod` shows them beside the
// scheduler's own FailedScheduling, which follows if the pod still fits nowhere.
//
//   nlohmann::json event = QueueEvent(pod, "CapacityWaitTimedOut", message, "gpuadmit-0", now);
//   client.Send("POST", "/api/v1/namespaces/" + ns + "/events", event.dump());
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

namespace gpuadmit {

// An Event on `pod` (as read from the API: its name, namespace, uid and resourceVersion are
// referenced), named as client-go names them ("<pod>.<unix nanoseconds in hex>"), first and
// last seen at `unix_ms`, count 1, from component "gpuadmit" on `instance`.
nlohmann::json QueueEvent(const nlohmann::json& pod, std::string_view reason,
                          std::string_view message, std::string_view instance, int64_t unix_ms);

}  // namespace gpuadmit
