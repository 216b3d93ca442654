// DecodeForDecisions: DecodeAdmissionReview for the request path, and the one way a review is
// decoded, at every size. It decodes the same request, but builds no DOM of the object: the body
// is parsed into simdjson's tape (core/json/json_tape.h) and the request keeps it, so decisions
// read the object and oldObject off the tape through JsonView (AdmissionRequest::Object()).
//
//   auto request = DecodeForDecisions(body);
//   JsonView object = request.value().Object();
//
// The text is parsed and fully validated by simdjson's DOM parser (Debian libsimdjson-dev). What
// it refuses is refused, with DecodeAdmissionReview's error where that refuses it too (it names
// the byte), else with simdjson's reason: an integer past 64 bits ("a number that is malformed
// or past 64 bits"; RapidJSON reads it as a double), or nesting deeper than kMaxJsonDepth
// anywhere (DecodeAdmissionReview does not count the depth of managedFields and status, which it
// skips). No apiserver sends either: it encodes the object it decoded, whose integers are 64-bit
// and whose larger numbers are doubles written with an exponent. A zero
// written with an exponent past 308 ("0e550") is 0, as JSON says, where DecodeAdmissionReview's
// RapidJSON refuses it as too big. tests/core/admission/review_decode_test.cc checks that every
// fixture is answered alike either way.
//
// Thread safety: pure function.
#pragma once

#include <string_view>

#include "core/admission/admission.h"
#include "core/result.h"

namespace gpuadmit {

Result<AdmissionRequest> DecodeForDecisions(std::string_view body);

}  // namespace gpuadmit
