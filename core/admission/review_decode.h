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
// the byte), else with simdjson's reason: a \u escape of a lone surrogate, an integer past 64
// bits, or nesting deeper than kMaxJsonDepth anywhere (DecodeAdmissionReview does not count the
// depth of managedFields and status, which it skips). No apiserver sends any of them. A zero
// written with an exponent past 308 ("0e550") is 0, as JSON says, where DecodeAdmissionReview's
// RapidJSON refuses it as too big. tests/core/admission/review_decode_test.cc checks that every
// fixture is answered alike either way.
//
// Thread safety: pure function (a parser per thread is kept between calls).
#pragma once

#include <string_view>

#include "core/admission/admission.h"
#include "core/result.h"

namespace gpuadmit {

Result<AdmissionRequest> DecodeForDecisions(std::string_view body);

}  // namespace gpuadmit
