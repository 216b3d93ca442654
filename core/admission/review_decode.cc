#include "core/admission/review_decode.h"

#include <memory>
#include <utility>

#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

// Larger bodies take DecodeAdmissionReview: simdjson's parser keeps the memory of the largest
// text it has read (about 10 bytes per byte of JSON), and a parser per worker thread would hold
// tens of MiB after one 7 MiB review.
constexpr size_t kLargestTapeBody = 256 * 1024;

// The request read off `tape`, which it then keeps. Every path returns `request`, so the one
// made by AdmissionRequestFrom is the one the caller gets: the request is never moved.
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
  if (body.size() > kLargestTapeBody) return DecodeAdmissionReview(body);
  std::shared_ptr<const JsonTape> tape = JsonTape::Parse(body, kMaxJsonDepth);
  if (tape == nullptr) return DecodeAdmissionReview(body);  // says why, or reads what it cannot
  return RequestOffTape(std::move(tape));
}

}  // namespace gpuadmit
