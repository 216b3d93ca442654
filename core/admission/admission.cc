#include "core/admission/admission.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/admission/base64.h"
#include "core/json/json_writer.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr std::string_view kV1 = "admission.k8s.io/v1";
constexpr std::string_view kV1Beta1 = "admission.k8s.io/v1beta1";

bool ParseOperation(std::string_view text, Operation& out) {
  if (text == "CREATE")
    out = Operation::kCreate;
  else if (text == "UPDATE")
    out = Operation::kUpdate;
  else if (text == "DELETE")
    out = Operation::kDelete;
  else if (text == "CONNECT")
    out = Operation::kConnect;
  else
    return false;
  return true;
}

std::string Text(JsonView value) { return std::string(value.string()); }

// Each warning said once, in the order first said (several pod specs or containers can give the
// same one), and the answer kept inside the apiserver's limits: an over-long warning is cut
// (with an ellipsis) rather than dropped, and warnings past the total are dropped with a note
// saying how many.
std::vector<std::string> FitWarnings(const std::vector<std::string>& said) {
  std::vector<std::string> warnings;
  for (const std::string& w : said) {
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }
  std::vector<std::string> out;
  size_t total = 0;
  for (size_t i = 0; i < warnings.size(); ++i) {
    std::string w = warnings[i];
    if (w.size() > kMaxWarningLength) {
      size_t cut = kMaxWarningLength - 3;
      // Do not split a UTF-8 sequence: back up to a lead byte.
      while (cut > 0 && (static_cast<unsigned char>(w[cut]) & 0xC0) == 0x80) --cut;
      w.resize(cut);
      w += "...";
    }
    // Reserve room for the note that says how many were dropped.
    if (total + w.size() > kMaxWarningsTotal - 64) {
      out.push_back("gpuadmit: " + std::to_string(warnings.size() - i) +
                    " more warnings dropped (limit 4 KiB)");
      break;
    }
    total += w.size();
    out.push_back(std::move(w));
  }
  return out;
}

// Every field of the request but object and oldObject, into `r`: the error, or nullopt when `r`
// holds them all.
std::optional<Error> ReadRequestFields(JsonView doc, AdmissionRequest& r) {
  if (!doc.is_object()) return Error{"body is not a JSON object"};

  auto [api_version, review_kind, request] = doc.Fields({"apiVersion", "kind", "request"});
  r.api_version = api_version.string();
  if (r.api_version != kV1 && r.api_version != kV1Beta1) {
    return Error{"apiVersion \"" + r.api_version + "\" is not admission.k8s.io/v1 or v1beta1"};
  }
  if (review_kind.string() != "AdmissionReview") {
    return Error{"kind \"" + Text(review_kind) + "\" is not AdmissionReview"};
  }
  if (!request.is_object()) return Error{"AdmissionReview has no request object"};
  auto [uid, kind, resource, operation, sub_resource, name, ns, dry_run] = request.Fields(
      {"uid", "kind", "resource", "operation", "subResource", "name", "namespace", "dryRun"});
  r.uid = uid.string();
  if (r.uid.empty()) return Error{"request.uid is missing or not a string"};

  if (!kind.is_object()) return Error{"request.kind is missing"};
  auto [group, version, kind_name] = kind.Fields({"group", "version", "kind"});
  r.kind.group = group.string();
  r.kind.version = version.string();
  r.kind.kind = kind_name.string();
  if (r.kind.kind.empty()) return Error{"request.kind.kind is missing"};
  if (resource.is_object()) {
    auto [resource_group, resource_version, resource_name] =
        resource.Fields({"group", "version", "resource"});
    r.resource.group = resource_group.string();
    r.resource.version = resource_version.string();
    r.resource.resource = resource_name.string();
  }
  if (!ParseOperation(operation.string(), r.operation)) {
    return Error{"request.operation \"" + Text(operation) +
                 "\" is not CREATE, UPDATE, DELETE or CONNECT"};
  }
  r.sub_resource = sub_resource.string();
  r.name = name.string();
  r.ns = ns.string();
  r.dry_run = dry_run.boolean();
  return std::nullopt;
}

}  // namespace

Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body) {
  std::string refusal;
  std::shared_ptr<const JsonTape> tape = JsonTape::Parse(body, kMaxJsonDepth, &refusal);
  if (tape == nullptr) return Error{std::move(refusal)};
  AdmissionRequest r;
  if (std::optional<Error> error = ReadRequestFields(tape->root(), r)) return *std::move(error);
  auto [object, old_object] = tape->root()["request"].Fields({"object", "oldObject"});
  r.object = object;
  r.old_object = old_object;
  r.tape = std::move(tape);
  return r;
}

AdmissionOutcome AdmissionOutcome::Allow(std::vector<std::string> warnings) {
  AdmissionOutcome o;
  o.warnings = std::move(warnings);
  return o;
}

AdmissionOutcome AdmissionOutcome::Patch(JsonPatch patch, std::vector<std::string> warnings) {
  AdmissionOutcome o;
  o.kind = Kind::kPatch;
  o.patch = std::move(patch);
  o.warnings = std::move(warnings);
  return o;
}

AdmissionOutcome AdmissionOutcome::Deny(int32_t code, std::string message,
                                        std::vector<std::string> warnings) {
  AdmissionOutcome o;
  o.kind = Kind::kDeny;
  o.code = code;
  o.message = std::move(message);
  o.warnings = std::move(warnings);
  return o;
}

AdmissionOutcome AdmissionOutcome::Fail(std::string message) {
  AdmissionOutcome o;
  o.kind = Kind::kError;
  o.message = std::move(message);
  return o;
}

std::string EncodeAdmissionResponse(const AdmissionRequest& request,
                                    const AdmissionOutcome& outcome, FailureMode failure_mode) {
  bool allowed = true;
  std::string_view patch;  // the RFC 6902 list, written in base64
  json status;
  const std::vector<std::string>* warnings = &outcome.warnings;
  std::vector<std::string> with_note;  // a fail-open answer's: the note first
  switch (outcome.kind) {
    case AdmissionOutcome::Kind::kAllow:
      break;
    case AdmissionOutcome::Kind::kPatch:
      if (!outcome.patch.empty()) patch = outcome.patch.Text();
      break;
    case AdmissionOutcome::Kind::kDeny:
      allowed = false;
      status = {{"code", outcome.code}, {"message", outcome.message}};
      break;
    case AdmissionOutcome::Kind::kError:
      if (failure_mode == FailureMode::kClosed) {
        allowed = false;
        status = {{"code", 500}, {"message", "gpuadmit: " + outcome.message}};
      } else {
        with_note.push_back("gpuadmit could not decide and let the object pass unchanged: " +
                            outcome.message);
        with_note.insert(with_note.end(), outcome.warnings.begin(), outcome.warnings.end());
        warnings = &with_note;
      }
      break;
  }
  // Written by hand around the parts that need JSON escaping: the base64 patch, most of the
  // answer, needs none, and running it through the serializer cost a fifth of a review. Keys in
  // the order nlohmann's map would give them.
  auto append = [](std::string& out, const json& value) {
    if (!AppendJson(value, out)) out += value.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto append_string = [&append](std::string& out, std::string_view s) {
    if (!AppendJsonString(s, out)) append(out, json(s));  // not UTF-8: dump() replaces
  };
  std::string out;
  out.reserve(256 + request.uid.size() + (patch.size() + 2) / 3 * 4);
  out += R"({"apiVersion":)";
  append_string(out, request.api_version);
  out += R"(,"kind":"AdmissionReview","response":{"allowed":)";
  out += allowed ? "true" : "false";
  if (!patch.empty()) {
    out += R"(,"patch":")";
    AppendBase64(patch, out);
    out += R"(","patchType":"JSONPatch")";
  }
  if (!status.is_null()) {
    out += R"(,"status":)";
    append(out, status);
  }
  out += R"(,"uid":)";
  append_string(out, request.uid);
  if (!warnings->empty()) {
    out += R"(,"warnings":)";
    append(out, FitWarnings(*warnings));
  }
  out += "}}";
  return out;
}

}  // namespace gpuadmit
