// DecodeForDecisions: DecodeAdmissionReview for the request path. It decodes the same request,
// but of the object and oldObject it builds only the fields that decisions read, so a review no
// longer pays for a DOM of the whole object (about half of a review's time went there).
//
//   auto request = DecodeForDecisions(body, policy.workloads);
//
// What is kept (the tries in review_decode.cc), for Pods and the built-in workload kinds:
// apiVersion and kind; the object's and the pod template's metadata name, generateName,
// namespace, labels and annotations; of each pod spec its containers and initContainers (name,
// image, resources, restartPolicy, command, args, the mountPath of each volumeMount), overhead,
// nodeSelector, affinity, tolerations, the names of its volumes and of its schedulingGates, and
// nodeName. Every object and
// list on a kept path is kept, empty if nothing under it is, so "is it there" reads the same as
// on the whole object. A custom workload's object (policy.workloads) is kept whole, with its
// managedFields; so are the request's userInfo and options. A decision that reads another
// field of the object must add it there: tests/core/admission/review_decode_test.cc checks that
// every fixture is answered alike either way.
//
// The text is parsed and fully validated by simdjson's DOM parser (Debian libsimdjson-dev).
// Whatever simdjson refuses (broken JSON, a lone surrogate escape, an integer past 64 bits,
// nesting deeper than kMaxJsonDepth), and bodies over 256 KiB, take DecodeAdmissionReview
// instead: the same errors, and the same values for what it accepts. One difference, found by
// the review fuzz target: a zero written with an exponent past 308 ("0e550") is 0 here, as JSON
// says, and the review is judged on; DecodeAdmissionReview's RapidJSON 1.1.0 refuses it as too
// big.
//
// Thread safety: pure function (a parser per thread is kept between calls).
#pragma once

#include <span>
#include <string_view>

#include "core/admission/admission.h"
#include "core/policy/policy.h"
#include "core/result.h"

namespace gpuadmit {

Result<AdmissionRequest> DecodeForDecisions(std::string_view body,
                                            std::span<const CustomWorkload> custom);

}  // namespace gpuadmit
