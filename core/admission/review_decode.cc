#include "core/admission/review_decode.h"

#include <memory>
#include <string>
#include <utility>

#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

// The request read off `tape`, which it then keeps.
Result<AdmissionRequest> RequestOffTape(std::shared_ptr<const JsonTape> tape) {
  auto request = AdmissionRequestFrom(tape->root());
  if (request.ok()) {
    AdmissionRequest& r = request.value();
    auto [object, old_object] = tape->root()["request"].Fields({"object", "oldObject"});
    r.tape_object = object;
    r.tape_old_object = old_object;
    r.tape = std::move(tape);
  }
  return request;
}

}  // namespace

Result<AdmissionRequest> DecodeForDecisions(std::string_view body) {
  std::string refusal;
  std::shared_ptr<const JsonTape> tape = JsonTape::Parse(body, kMaxJsonDepth, &refusal);
  if (tape != nullptr) return RequestOffTape(std::move(tape));
  // Refused: in DecodeAdmissionReview's words, which name the byte, where it refuses too.
  auto whole = DecodeAdmissionReview(body);
  if (!whole.ok()) return whole.error();
  return Error{refusal};
}

}  // namespace gpuadmit
