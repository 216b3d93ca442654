// KubeStatus: the meta/v1 Status body with which the kube-apiserver answers an error, for the
// fakes that answer as it does (FakeKubeApiServer's pod routes, FakePodUpdate).
//
//   nlohmann::json body = KubeStatus(404, "NotFound", R"(pods "a" not found)",
//                                    {{"name", "a"}, {"kind", "pods"}});
//
// Thread safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace gpuadmit::testing {

// A Status for HTTP `code` with `reason` (NotFound, Conflict, Invalid...) and `message`;
// `details` (name, kind, causes) when not null.
inline nlohmann::json KubeStatus(int code, const std::string& reason, const std::string& message,
                                 nlohmann::json details = nullptr) {
  nlohmann::json status = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!details.is_null()) status["details"] = std::move(details);
  status["code"] = code;
  return status;
}

}  // namespace gpuadmit::testing
