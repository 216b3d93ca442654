// AdmissionReview decoding (admission.k8s.io/v1 and v1beta1) and the one function that turns
// an outcome into the response the apiserver expects (controller-runtime's Response.Complete).
//
//   auto request = DecodeAdmissionReview(body);
//   if (!request.ok()) -> HTTP 400 with request.error().message
//   std::string answer = EncodeAdmissionResponse(request.value(), AdmissionOutcome::Allow());
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/admission/json_patch.h"
#include "core/json/json_tape.h"
#include "core/json/json_view.h"
#include "core/kube/group_version_kind.h"
#include "core/policy/failure_mode.h"
#include "core/result.h"

namespace gpuadmit {

enum class Operation { kCreate, kUpdate, kDelete, kConnect };

struct AdmissionRequest {
  std::string api_version;  // echoed in the answer: "admission.k8s.io/v1" or ".../v1beta1"
  std::string uid;
  GroupVersionKind kind;
  GroupVersionResource resource;
  std::string sub_resource;
  std::string name;
  std::string ns;
  Operation operation = Operation::kCreate;
  bool dry_run = false;
  // The parsed body the request was read off (DecodeAdmissionReview), and its request.object
  // and request.oldObject on it: absent when the review has none. A tape does not move when the
  // request does, so the views stay good as long as the request keeps the tape.
  std::shared_ptr<const JsonTape> tape;
  JsonView object;
  JsonView old_object;
};

// Decodes an AdmissionReview body, the one way at every size: the body is parsed into a JsonTape
// that the request keeps, and decisions read the object and oldObject off it (the `object` and
// `old_object` views); no DOM is built. Errors (one line, for an HTTP 400) when the body is not JSON (JsonTape's words),
// nests deeper than kMaxJsonDepth, is not an admission.k8s.io/v1 or v1beta1 AdmissionReview, or
// has no request, uid, kind or operation. The object itself is not interpreted here.
Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body);

// What a review decided. Error is a failure inside gpuadmit: it is answered as the policy's
// failure mode says (open: allowed with a warning; closed: denied).
struct AdmissionOutcome {
  enum class Kind { kAllow, kPatch, kDeny, kError };

  Kind kind = Kind::kAllow;
  JsonPatch patch;      // RFC 6902 operations, for kPatch
  std::string message;  // for kDeny and kError
  int32_t code = 0;     // HTTP-style status code, for kDeny
  std::vector<std::string> warnings;

  static AdmissionOutcome Allow(std::vector<std::string> warnings = {});
  static AdmissionOutcome Patch(JsonPatch patch, std::vector<std::string> warnings = {});
  static AdmissionOutcome Deny(int32_t code, std::string message,
                               std::vector<std::string> warnings = {});
  static AdmissionOutcome Fail(std::string message);
};

// The apiserver's limits on warnings: each at most 256 characters, all together at most 4 KiB.
inline constexpr size_t kMaxWarningLength = 256;
inline constexpr size_t kMaxWarningsTotal = 4096;

// Builds the AdmissionReview answer: apiVersion, kind and uid echoed; patch (base64 of the
// operation list) and patchType both or neither; an empty patch becomes a plain allow; warnings
// said once each and trimmed to the apiserver's limits.
std::string EncodeAdmissionResponse(const AdmissionRequest& request,
                                    const AdmissionOutcome& outcome, FailureMode failure_mode);

}  // namespace gpuadmit
