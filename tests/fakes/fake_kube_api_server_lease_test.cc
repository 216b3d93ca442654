// FakeKubeApiServer's coordination.k8s.io/v1 Leases over loopback TLS, as a leader-election
// client meets them: get, create, optimistic updates on resourceVersion, the token, faults.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>

#include "tests/fakes/fake_kube_api_server.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::FakeKubeApiServer;

constexpr char kToken[] = "s3cret";
constexpr char kNamespace[] = "gpuadmit-system";
constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/gpuadmit-system/leases";
constexpr char kLease[] = "/apis/coordination.k8s.io/v1/namespaces/gpuadmit-system/leases/gpuadmit";

// A Lease as client-go's leader election writes it; `resource_version` empty: none.
json LeaseBody(const std::string& holder, const std::string& resource_version = "") {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "gpuadmit"}, {"namespace", kNamespace}}},
                {"spec",
                 {{"holderIdentity", holder},
                  {"leaseDurationSeconds", 15},
                  {"acquireTime", "2026-11-25T14:00:00.000000Z"},
                  {"renewTime", "2026-11-25T14:00:00.000000Z"},
                  {"leaseTransitions", 0}}}};
  if (!resource_version.empty()) lease["metadata"]["resourceVersion"] = resource_version;
  return lease;
}

// The Status the apiserver answers for `reason` on the Lease "gpuadmit".
json LeaseStatus(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", json::object()},
          {"status", "Failure"},
          {"message", message},
          {"reason", reason},
          {"details", {{"name", "gpuadmit"}, {"group", "coordination.k8s.io"}, {"kind", "leases"}}},
          {"code", code}};
}

json NotFound() {
  return LeaseStatus(404, "NotFound", R"(leases.coordination.k8s.io "gpuadmit" not found)");
}

json Conflict() {
  return LeaseStatus(409, "Conflict",
                     "Operation cannot be fulfilled on leases.coordination.k8s.io \"gpuadmit\": "
                     "the object has been modified; please apply your changes to the latest "
                     "version and try again");
}

struct Answer {
  int status = 0;  // -1: no answer
  json body;
};

class FakeLeaseApiTest : public ::testing::Test {
 protected:
  Answer Send(const std::string& method, const std::string& path, const json& body = nullptr,
              const std::string& token = kToken) {
    std::string url = api_.url();
    httplib::SSLClient client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
    client.set_ca_cert_path(api_.ca_file().c_str());
    client.enable_server_certificate_verification(true);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    httplib::Result res =
        method == "POST"  ? client.Post(path.c_str(), headers, body.dump(), "application/json")
        : method == "PUT" ? client.Put(path.c_str(), headers, body.dump(), "application/json")
                          : client.Get(path.c_str(), headers);
    if (!res) return {-1, nullptr};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  // Creates the Lease held by `holder`; its resourceVersion.
  std::string Create(const std::string& holder) {
    Answer created = Send("POST", kLeases, LeaseBody(holder));
    EXPECT_EQ(created.status, 201);
    return created.body["metadata"].value("resourceVersion", "");
  }

  FakeKubeApiServer api_{kToken};
};

TEST_F(FakeLeaseApiTest, GetOfAMissingLeaseIs404NotFound) {
  Answer got = Send("GET", kLease);
  EXPECT_EQ(got.status, 404);
  EXPECT_EQ(got.body, NotFound());
}

TEST_F(FakeLeaseApiTest, CreateIs201WithTheServersResourceVersionUidAndTimestamp) {
  json body = LeaseBody("replica-a");
  body["metadata"].erase("namespace");  // the URL's is taken
  Answer created = Send("POST", kLeases, body);
  ASSERT_EQ(created.status, 201);
  json& metadata = created.body["metadata"];
  EXPECT_TRUE(std::regex_match(metadata.value("creationTimestamp", ""),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(metadata.value("uid", "").size(), 36u);
  json expected = LeaseBody("replica-a");
  expected["metadata"]["resourceVersion"] = "1";
  expected["metadata"]["uid"] = metadata["uid"];
  expected["metadata"]["creationTimestamp"] = metadata["creationTimestamp"];
  EXPECT_EQ(created.body, expected);
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), expected);
  Answer got = Send("GET", kLease);
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, expected);
}

TEST_F(FakeLeaseApiTest, CreatingAnExistingLeaseIs409AlreadyExistsAndKeepsTheStoredOne) {
  Create("replica-a");
  json stored = *api_.Lease(kNamespace, "gpuadmit");
  Answer again = Send("POST", kLeases, LeaseBody("replica-b"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body, LeaseStatus(409, "AlreadyExists",
                                    R"(leases.coordination.k8s.io "gpuadmit" already exists)"));
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), stored);
}

TEST_F(FakeLeaseApiTest, UpdateWithTheStoredResourceVersionIs200WithANewOne) {
  std::string resource_version = Create("replica-a");
  json stored = *api_.Lease(kNamespace, "gpuadmit");
  json renewed = LeaseBody("replica-a", resource_version);
  renewed["spec"]["renewTime"] = "2026-11-25T14:00:02.000000Z";
  Answer updated = Send("PUT", kLease, renewed);
  ASSERT_EQ(updated.status, 200);
  json expected = renewed;
  expected["metadata"]["resourceVersion"] = "2";
  expected["metadata"]["uid"] = stored["metadata"]["uid"];
  expected["metadata"]["creationTimestamp"] = stored["metadata"]["creationTimestamp"];
  EXPECT_EQ(updated.body, expected);
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), expected);
}

TEST_F(FakeLeaseApiTest, OfTwoUpdatesFromTheSameResourceVersionTheSecondIs409Conflict) {
  std::string resource_version = Create("replica-a");
  json taken = LeaseBody("replica-b", resource_version);
  taken["spec"]["leaseTransitions"] = 1;
  ASSERT_EQ(Send("PUT", kLease, taken).status, 200);
  json after_first = *api_.Lease(kNamespace, "gpuadmit");

  Answer stale = Send("PUT", kLease, LeaseBody("replica-c", resource_version));
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body, Conflict());
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), after_first);
  EXPECT_EQ(after_first["spec"]["holderIdentity"], "replica-b");
}

TEST_F(FakeLeaseApiTest, UpdateWithoutAResourceVersionIsUnconditional) {
  Create("replica-a");
  Answer updated = Send("PUT", kLease, LeaseBody("replica-b"));
  EXPECT_EQ(updated.status, 200);
  EXPECT_EQ(updated.body["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit")->at("spec")["holderIdentity"], "replica-b");
}

TEST_F(FakeLeaseApiTest, UpdateThatChangesNothingKeepsTheResourceVersion) {
  std::string resource_version = Create("replica-a");
  Answer same = Send("PUT", kLease, LeaseBody("replica-a", resource_version));
  EXPECT_EQ(same.status, 200);
  EXPECT_EQ(same.body, *api_.Lease(kNamespace, "gpuadmit"));
  EXPECT_EQ(same.body["metadata"]["resourceVersion"], resource_version);
}

TEST_F(FakeLeaseApiTest, UpdateOfAMissingLeaseIs404NotFoundAndCreatesNothing) {
  Answer updated = Send("PUT", kLease, LeaseBody("replica-a", "7"));
  EXPECT_EQ(updated.status, 404);
  EXPECT_EQ(updated.body, NotFound());
  EXPECT_EQ(Send("PUT", kLease, LeaseBody("replica-a")).status, 404);
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), std::nullopt);
}

TEST_F(FakeLeaseApiTest, BodiesThatAreNotThisLeaseAre400Or422) {
  Create("replica-a");
  json other_namespace = LeaseBody("replica-b");
  other_namespace["metadata"]["namespace"] = "kube-system";
  json other_name = LeaseBody("replica-b");
  other_name["metadata"]["name"] = "other";
  json pod = LeaseBody("replica-b");
  pod["apiVersion"] = "v1";
  json no_name = LeaseBody("replica-b");
  no_name["metadata"].erase("name");
  EXPECT_EQ(Send("POST", kLeases, other_namespace).status, 400);
  EXPECT_EQ(Send("PUT", kLease, other_namespace).status, 400);
  EXPECT_EQ(Send("PUT", kLease, other_name).body["message"],
            "the name of the object (other) does not match the name on the URL (gpuadmit)");
  EXPECT_EQ(Send("PUT", kLease, pod).status, 400);
  EXPECT_EQ(Send("PUT", kLease, json::array()).status, 400);
  Answer unnamed = Send("POST", kLeases, no_name);
  EXPECT_EQ(unnamed.status, 422);
  EXPECT_EQ(unnamed.body["reason"], "Invalid");
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit")->at("spec")["holderIdentity"], "replica-a");
}

TEST_F(FakeLeaseApiTest, WithoutTheTokenEveryLeaseRequestIs401AndChangesNothing) {
  EXPECT_EQ(Send("POST", kLeases, LeaseBody("replica-a"), "").status, 401);
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), std::nullopt);
  std::string resource_version = Create("replica-a");
  json stored = *api_.Lease(kNamespace, "gpuadmit");
  Answer got = Send("GET", kLease, nullptr, "");
  EXPECT_EQ(got.status, 401);
  EXPECT_EQ(got.body["reason"], "Unauthorized");
  EXPECT_EQ(Send("PUT", kLease, LeaseBody("replica-b", resource_version), "wrong").status, 401);
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), stored);
}

TEST_F(FakeLeaseApiTest, PlantedLeaseIsServedAndFreshResourceVersionsComeAfterIt) {
  json planted = {{"spec", {{"holderIdentity", "replica-z"}, {"leaseDurationSeconds", 15}}},
                  {"metadata", {{"resourceVersion", "41"}}}};
  api_.SetLease(kNamespace, "gpuadmit", planted);
  json expected = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "gpuadmit"}, {"namespace", kNamespace}, {"resourceVersion", "41"}}},
      {"spec", planted["spec"]}};
  Answer got = Send("GET", kLease);
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, expected);
  EXPECT_EQ(Send("PUT", kLease, LeaseBody("replica-a", "41")).body["metadata"]["resourceVersion"],
            "42");
}

TEST_F(FakeLeaseApiTest, AnInjectedFaultAnswersTheNextLeaseRequestOnly) {
  api_.InjectFault("leases", FakeKubeApiServer::RequestKind::kLease,
                   FakeKubeApiServer::Fault::Status(500));
  Answer faulted = Send("POST", kLeases, LeaseBody("replica-a"));
  EXPECT_EQ(faulted.status, 500);
  EXPECT_EQ(faulted.body["reason"], "InternalError");
  EXPECT_EQ(api_.Lease(kNamespace, "gpuadmit"), std::nullopt);
  EXPECT_EQ(Send("POST", kLeases, LeaseBody("replica-a")).status, 201);
}

TEST_F(FakeLeaseApiTest, LeaseRequestsAreRecordedWithMethodAndBody) {
  Send("GET", kLease);
  Send("POST", kLeases, LeaseBody("replica-a"));
  auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].target, kLease);
  EXPECT_EQ(requests[0].body, "");
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(requests[1].target, kLeases);
  EXPECT_EQ(json::parse(requests[1].body), LeaseBody("replica-a"));
  EXPECT_EQ(requests[1].authorization, std::string("Bearer ") + kToken);
}

}  // namespace
}  // namespace gpuadmit
