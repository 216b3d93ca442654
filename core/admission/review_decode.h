// DecodeForDecisions: DecodeAdmissionReview for the request path. It decodes the same request,
// but builds no DOM of the object: the body is parsed into simdjson's tape (core/json/json_tape.h)
// and the request keeps it, so decisions read the object and oldObject off the tape through
// JsonView (AdmissionRequest::Object()). A DOM of what decisions read once took half of a
// review's time.
//
//   auto request = DecodeForDecisions(body);
//   JsonView object = request.value().Object();
//
// The text is parsed and fully validated by simdjson's DOM parser (Debian libsimdjson-dev).
// Whatever simdjson refuses (broken JSON, a lone surrogate escape, an integer past 64 bits,
// nesting deeper than kMaxJsonDepth), and bodies over 256 KiB, take DecodeAdmissionReview
// instead: the same errors, and the same values for what it accepts. One difference, found by
// the review fuzz target: a zero written with an exponent past 308 ("0e550") is 0 here, as JSON
// says, and the review is judged on; DecodeAdmissionReview's RapidJSON 1.1.0 refuses it as too
// big. tests/core/admission/review_decode_test.cc checks that every fixture is answered alike
// either way.
//
// Thread safety: pure function (a parser per thread is kept between calls).
#pragma once

#include <string_view>

#include "core/admission/admission.h"
#include "core/result.h"

namespace gpuadmit {

Result<AdmissionRequest> DecodeForDecisions(std::string_view body);

}  // namespace gpuadmit
