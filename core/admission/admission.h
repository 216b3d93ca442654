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
#include <nlohmann/json.hpp>
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
  // The object and oldObject, as DecodeAdmissionReview builds them: null when absent (DELETE,
  // CREATE), and null when the request was read off a tape instead.
  nlohmann::json object;
  nlohmann::json old_object;
  // The parsed body DecodeForDecisions reads the request off, null for DecodeAdmissionReview;
  // and its request.object and request.oldObject (a tape does not move when the request does).
  std::shared_ptr<const JsonTape> tape;
  JsonView tape_object;
  JsonView tape_old_object;

  // The object and oldObject, wherever they are: on the tape, or the values above. Absent or
  // null when the review has none.
  JsonView Object() const;
  JsonView OldObject() const;
};

// Deepest JSON nesting accepted. Kubernetes objects nest about 20 deep; the apiserver's own
// decoder stops at 10,000. 512 keeps every recursive walk of a document far from the stack's end.
inline constexpr int kMaxJsonDepth = 512;

// Decodes an AdmissionReview body. Errors (one line, for an HTTP 400) when the body is not JSON
// or not UTF-8, nests deeper than kMaxJsonDepth, is not an admission.k8s.io/v1 or v1beta1
// AdmissionReview, or has no request, uid, kind or operation. The object itself is not
// interpreted here; its metadata.managedFields and status, which no decision reads, are dropped.
Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body);

// The checks and fields of DecodeAdmissionReview, for a body already parsed: the same errors, and
// every field but object and oldObject, which the caller keeps where they are (its tape).
Result<AdmissionRequest> AdmissionRequestFrom(JsonView doc);

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
// trimmed to the apiserver's limits.
std::string EncodeAdmissionResponse(const AdmissionRequest& request,
                                    const AdmissionOutcome& outcome, FailureMode failure_mode);

}  // namespace gpuadmit
