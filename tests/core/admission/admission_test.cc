#include "core/admission/admission.h"

#include <gtest/gtest.h>

#include "core/admission/base64.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::ReadSourceFile;

AdmissionRequest Decoded(const std::string& fixture) {
  auto r = DecodeAdmissionReview(ReadSourceFile(fixture));
  if (!r.ok()) ADD_FAILURE() << fixture << ": " << r.error().message;
  return r.ok() ? r.value() : AdmissionRequest{};
}

TEST(DecodeAdmissionReview, ReadsEveryFieldOfAV1PodCreate) {
  AdmissionRequest r =
      Decoded("tests/fixtures/admission/v1-pod-create-kubernetes-admin-unprivileged.json");
  EXPECT_EQ(r.api_version, "admission.k8s.io/v1");
  EXPECT_FALSE(r.uid.empty());
  EXPECT_EQ(r.kind.kind, "Pod");
  EXPECT_EQ(r.kind.group, "");
  EXPECT_EQ(r.kind.version, "v1");
  EXPECT_EQ(r.resource.resource, "pods");
  EXPECT_EQ(r.operation, Operation::kCreate);
  EXPECT_EQ(r.ns, "default");
  EXPECT_EQ(r.object["kind"].string(), "Pod");
  EXPECT_TRUE(r.old_object.is_null());
  EXPECT_FALSE(r.dry_run);
}

TEST(DecodeAdmissionReview, ReadsV1Beta1AndKeepsItsApiVersionToEcho) {
  AdmissionRequest r =
      Decoded("tests/fixtures/admission/v1beta1-deployment-create-minikube-no-annotation.json");
  EXPECT_EQ(r.api_version, "admission.k8s.io/v1beta1");
  EXPECT_EQ(r.kind.group, "apps");
  EXPECT_EQ(r.kind.kind, "Deployment");
  EXPECT_EQ(r.ns, "kube-public");
}

TEST(DecodeAdmissionReview, ReadsDeleteWithOldObjectAndNoObject) {
  AdmissionRequest r = Decoded("tests/fixtures/admission/wrapped-pod-delete-with-oldobject.json");
  EXPECT_EQ(r.operation, Operation::kDelete);
  EXPECT_TRUE(r.object.is_null());
  EXPECT_TRUE(r.old_object.is_object());
}

TEST(DecodeAdmissionReview, ReadsDryRunAndSubResource) {
  EXPECT_TRUE(Decoded("tests/fixtures/gpu/kubectl-pod-dryrun.json").dry_run);
  EXPECT_EQ(Decoded("tests/fixtures/gpu/kubectl-pod-status-subresource.json").sub_resource,
            "status");
}

TEST(DecodeAdmissionReview, RefusesBodiesThatAreNotAnAdmissionReviewWithOneLineReasons) {
  struct Case {
    std::string body;
    std::string reason;
  } cases[] = {
      {"not json", "invalid JSON: Problem while parsing an atom starting with the letter 'n'"},
      {"[1,2]", "body is not a JSON object"},
      {R"({"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview"})",
       "apiVersion \"admission.k8s.io/v2\" is not admission.k8s.io/v1 or v1beta1"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"Foo"})",
       "kind \"Foo\" is not AdmissionReview"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
       "AdmissionReview has no request object"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"kind":"Pod"},"operation":"CREATE"}})",
       "request.uid is missing or not a string"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}})",
       "request.uid is missing or not a string"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"kind":"Pod"},"operation":"PATCH"}})",
       "request.operation \"PATCH\" is not CREATE, UPDATE, DELETE or CONNECT"},
      {std::string(1000, '[') + std::string(1000, ']'), "JSON nests deeper than 512 levels"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"name\":\"\xff\xfe\"}",
       "invalid JSON at byte 44: invalid UTF-8"},
  };
  for (const Case& c : cases) {
    auto r = DecodeAdmissionReview(c.body);
    ASSERT_FALSE(r.ok()) << c.body.substr(0, 80);
    EXPECT_EQ(r.error().message, c.reason);
  }
}

AdmissionRequest MinimalRequest(const std::string& api_version = "admission.k8s.io/v1") {
  AdmissionRequest r;
  r.api_version = api_version;
  r.uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
  return r;
}

TEST(EncodeAdmissionResponse, AllowEchoesApiVersionKindAndUidWithoutPatchFields) {
  json out = json::parse(EncodeAdmissionResponse(MinimalRequest("admission.k8s.io/v1beta1"),
                                                 AdmissionOutcome::Allow(), FailureMode::kOpen));
  EXPECT_EQ(out, json::parse(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",
      "response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}})"));
}

TEST(EncodeAdmissionResponse, PatchCarriesBase64OperationsAndPatchTypeTogether) {
  json ops =
      json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", json::object()}}});
  JsonPatch patch;
  patch.Add(PatchPath() / "metadata" / "annotations", json::object());
  json out = json::parse(EncodeAdmissionResponse(
      MinimalRequest(), AdmissionOutcome::Patch(std::move(patch)), FailureMode::kOpen));
  EXPECT_EQ(out["response"]["patchType"], "JSONPatch");
  EXPECT_EQ(out["response"]["patch"], Base64Encode(ops.dump()));
}

TEST(EncodeAdmissionResponse, EmptyPatchIsAPlainAllow) {
  json out = json::parse(
      EncodeAdmissionResponse(MinimalRequest(), AdmissionOutcome::Patch({}), FailureMode::kOpen));
  EXPECT_FALSE(out["response"].contains("patch"));
  EXPECT_FALSE(out["response"].contains("patchType"));
}

TEST(EncodeAdmissionResponse, FailureAnswersByTheFailureMode) {
  json open = json::parse(EncodeAdmissionResponse(MinimalRequest(), AdmissionOutcome::Fail("boom"),
                                                  FailureMode::kOpen));
  EXPECT_EQ(open["response"]["allowed"], true);
  EXPECT_EQ(open["response"]["warnings"],
            json::array({"gpuadmit could not decide and let the object pass unchanged: boom"}));
  json closed = json::parse(EncodeAdmissionResponse(
      MinimalRequest(), AdmissionOutcome::Fail("boom"), FailureMode::kClosed));
  EXPECT_EQ(closed["response"]["allowed"], false);
  EXPECT_EQ(closed["response"]["status"],
            json::parse(R"({"code":500,"message":"gpuadmit: boom"})"));
}

TEST(EncodeAdmissionResponse, DenyCarriesStatusAndNoPatch) {
  json out = json::parse(EncodeAdmissionResponse(
      MinimalRequest(), AdmissionOutcome::Deny(403, "no GPU"), FailureMode::kOpen));
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"], json::parse(R"({"code":403,"message":"no GPU"})"));
  EXPECT_FALSE(out["response"].contains("patch"));
}

TEST(EncodeAdmissionResponse, WarningsStayWithinTheApiserverLimits) {
  std::vector<std::string> warnings;
  for (int i = 0; i < 40; ++i) warnings.push_back(std::to_string(i) + std::string(300, 'w'));
  json out = json::parse(EncodeAdmissionResponse(
      MinimalRequest(), AdmissionOutcome::Allow(warnings), FailureMode::kOpen));
  size_t total = 0;
  for (const json& w : out["response"]["warnings"]) {
    EXPECT_LE(w.get<std::string>().size(), kMaxWarningLength);
    total += w.get<std::string>().size();
  }
  EXPECT_LE(total, kMaxWarningsTotal);
  EXPECT_EQ(out["response"]["warnings"].back(), "gpuadmit: 25 more warnings dropped (limit 4 KiB)");
}

TEST(EncodeAdmissionResponse, SaysEachWarningOnceInTheOrderFirstSaid) {
  json out = json::parse(EncodeAdmissionResponse(
      MinimalRequest(), AdmissionOutcome::Allow({"b", "a", "b", "c", "a"}), FailureMode::kOpen));
  EXPECT_EQ(out["response"]["warnings"], json({"b", "a", "c"}));
}

}  // namespace
}  // namespace gpuadmit
