// libFuzzer target: AdmissionReview decoding and the whole review path (decode, find pod specs,
// plan every stage, patch, encode) on the demo cluster with the shipped example policy.
// Every input must give an answer or an error, never a crash, a hang or a sanitizer report; an
// answer must itself be valid JSON with the request's uid echoed. Differential: the request
// path's decode (DecodeForDecisions) must accept only what DecodeAdmissionReview accepts, lead
// to the same answer, and refuse with its words (review_decode.h names the differences).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/admission/review.h"
#include "core/admission/review_decode.h"
#include "tests/fakes/test_cluster.h"

namespace {

struct Inputs {
  gpuadmit::InventorySnapshot snapshot =
      gpuadmit::testing::SnapshotOf(gpuadmit::testing::DemoCluster());
  gpuadmit::Policy policy = [] {
    auto parsed =
        gpuadmit::ParsePolicy(gpuadmit::testing::ReadSourceFile("manifests/examples/policy.yaml"));
    if (!parsed.ok()) std::abort();
    return std::move(parsed).value();
  }();
};

bool HasLongDigitRun(std::string_view text) {
  size_t run = 0;
  for (char c : text) {
    run = c >= '0' && c <= '9' ? run + 1 : 0;
    if (run >= 19) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Inputs* inputs = new Inputs();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto answer = gpuadmit::Review(body, inputs->snapshot, inputs->policy);
  if (answer.ok()) {
    auto doc = nlohmann::json::parse(answer.value().body, nullptr, false);
    if (doc.is_discarded() || !doc.contains("response")) std::abort();
    if (doc["response"].value("uid", "") != answer.value().uid) std::abort();
  }
  auto whole = gpuadmit::DecodeAdmissionReview(body);
  auto lean = gpuadmit::DecodeForDecisions(body);
  // The one known difference: RapidJSON 1.1.0 refuses a zero written with an exponent past 308
  // ("0e550") as too big, which JSON allows and simdjson reads as 0 (review_decode.h); the lean
  // decode then goes on to judge the review itself.
  if (!whole.ok() && whole.error().message.find("Number too big") != std::string::npos) return 0;
  if (!lean.ok()) {
    // Refused with DecodeAdmissionReview's words where it refuses too; where it accepts, only
    // for what the tape alone refuses: nesting inside the managedFields and status it skips, or
    // an integer past 64 bits (RapidJSON reads it as a double), so a run of 19 digits or more.
    const std::string& why = lean.error().message;
    bool tape_only = why.rfind("JSON nests deeper", 0) == 0 ||
                     (why.find("past 64 bits") != std::string::npos && HasLongDigitRun(body));
    if (whole.ok() ? !tape_only : whole.error().message != why) {
      std::abort();
    }
    return 0;
  }
  if (!whole.ok()) std::abort();
  gpuadmit::ReviewContext context{inputs->snapshot, inputs->policy};
  if (gpuadmit::ReviewRequest(whole.value(), context).body !=
      gpuadmit::ReviewRequest(lean.value(), context).body) {
    std::abort();
  }
  return 0;
}
