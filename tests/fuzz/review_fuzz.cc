// libFuzzer target: AdmissionReview decoding and the whole review path (decode, find pod specs,
// plan every stage, patch, encode) on the demo cluster with the shipped example policy.
// Every input must give an answer or an error, never a crash, a hang or a sanitizer report; an
// answer must itself be valid JSON with the request's uid echoed. Differential: JsonView's two
// backends read alike, so a request read off the tape is answered exactly as when its object
// and oldObject are nlohmann values copied off that tape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/admission/review.h"
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
  auto request = gpuadmit::DecodeAdmissionReview(body);
  if (!request.ok()) {
    if (answer.ok()) std::abort();
    return 0;
  }
  gpuadmit::ReviewContext context{inputs->snapshot, inputs->policy};
  gpuadmit::testing::RequestOverValues values(request.value());
  if (gpuadmit::ReviewRequest(request.value(), context).body !=
      gpuadmit::ReviewRequest(values.request, context).body) {
    std::abort();
  }
  return 0;
}
