// FakeKubeApiServer's routes for a scheduling-gate lifter over loopback TLS: GET and merge PATCH
// of one pod (conflicts, the apiserver's gate and node affinity rules, the MODIFIED watch event),
// Events, /version, faults and the token.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/fakes/fake_kube_api_server.h"
#include "tests/fakes/kube_status.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::FakeKubeApiServer;
using testing::KubeStatus;

constexpr char kToken[] = "s3cret";
constexpr char kPod[] = "/api/v1/namespaces/team-a/pods/train-0";
constexpr char kEvents[] = "/api/v1/namespaces/team-a/events";
constexpr char kMergePatch[] = "application/merge-patch+json";
constexpr char kGate[] = "gpuadmit.io/capacity";

// team-a/train-0 at resourceVersion 41, held by `gates`, with `affinity` when not null.
json Pod(const std::vector<std::string>& gates, const json& affinity = nullptr) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "train-0"}, {"namespace", "team-a"}, {"resourceVersion", "41"}}},
      {"spec", {{"containers", {{{"name", "main"}, {"image", "trainer:1"}}}}}},
      {"status", {{"phase", "Pending"}}}};
  for (const std::string& gate : gates) pod["spec"]["schedulingGates"].push_back({{"name", gate}});
  if (!affinity.is_null()) pod["spec"]["affinity"] = affinity;
  return pod;
}

// A required node affinity of one term per entry, each with these hostname requirements.
json RequiredHostnames(const std::vector<std::vector<std::string>>& terms) {
  json node_selector_terms = json::array();
  for (const auto& hosts : terms) {
    json expressions = json::array();
    for (const std::string& host : hosts) {
      expressions.push_back(
          {{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {host}}});
    }
    node_selector_terms.push_back({{"matchExpressions", expressions}});
  }
  return {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms", node_selector_terms}}}}}};
}

struct Answer {
  int status = 0;  // -1: no answer
  json body;
};

class FakePodApiTest : public ::testing::Test {
 protected:
  Answer Send(const std::string& method, const std::string& path, const json& body = nullptr,
              const std::string& content_type = kMergePatch, const std::string& token = kToken) {
    httplib::SSLClient client("127.0.0.1", Port());
    client.set_ca_cert_path(api_.ca_file().c_str());
    client.enable_server_certificate_verification(true);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    httplib::Result res =
        method == "PATCH"  ? client.Patch(path.c_str(), headers, body.dump(), content_type)
        : method == "POST" ? client.Post(path.c_str(), headers, body.dump(), content_type)
                           : client.Get(path.c_str(), headers);
    if (!res) return {-1, nullptr};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  Answer Patch(const json& patch) { return Send("PATCH", kPod, patch); }

  // The whole body of a pods watch, which the test has ended with EndWatch.
  std::string WatchedPods() {
    httplib::SSLClient client("127.0.0.1", Port());
    client.set_ca_cert_path(api_.ca_file().c_str());
    client.enable_server_certificate_verification(true);
    auto watch =
        client.Get("/api/v1/pods?watch=1", {{"Authorization", "Bearer " + std::string(kToken)}});
    return watch ? watch->body : "no answer";
  }

  int Port() const {
    std::string url = api_.url();
    return std::stoi(url.substr(url.rfind(':') + 1));
  }

  // The stored pod, which the test expects to be there.
  json Stored() const { return api_.Pod("team-a", "train-0").value_or(nullptr); }

  // Plants `pod` with another pod beside it, the list at resourceVersion 100.
  void Plant(const json& pod) {
    json other = Pod({});
    other["metadata"]["name"] = "other";
    api_.SetObjects("pods", {other, pod}, "100");
  }

  FakeKubeApiServer api_{kToken};
};

TEST_F(FakePodApiTest, GetServesTheStoredPodAndAMissingOneIs404NotFound) {
  Plant(Pod({kGate}));
  Answer got = Send("GET", kPod);
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, Pod({kGate}));
  EXPECT_EQ(Stored(), Pod({kGate}));

  Answer missing = Send("GET", "/api/v1/namespaces/team-b/pods/train-0");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, KubeStatus(404, "NotFound", R"(pods "train-0" not found)",
                                     {{"name", "train-0"}, {"kind", "pods"}}));
  EXPECT_EQ(api_.Pod("team-b", "train-0"), std::nullopt);
}

TEST_F(FakePodApiTest, PatchRemovingTheGateIsStoredUnderANewResourceVersionAndWatched) {
  Plant(Pod({kGate}));
  Answer patched =
      Patch({{"metadata", {{"resourceVersion", "41"}}}, {"spec", {{"schedulingGates", nullptr}}}});
  json expected = Pod({});
  expected["metadata"]["resourceVersion"] = "101";  // above the list's 100
  EXPECT_EQ(patched.status, 200);
  EXPECT_EQ(patched.body, expected);
  EXPECT_EQ(Stored(), expected);
  EXPECT_EQ(Send("GET", kPod).body, expected);
  Answer listed = Send("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dtrain-0");
  EXPECT_EQ(listed.body["items"], json::array({expected}));

  api_.EndWatch("pods");
  EXPECT_EQ(WatchedPods(), json({{"type", "MODIFIED"}, {"object", expected}}).dump() + "\n");

  // A second change gets the next number.
  Answer annotated = Patch({{"metadata", {{"annotations", {{"note", "lifted"}}}}}});
  EXPECT_EQ(annotated.body["metadata"]["resourceVersion"], "102");
}

TEST_F(FakePodApiTest, StaleResourceVersionIs409ConflictAndChangesNothing) {
  Plant(Pod({kGate}));
  Answer stale =
      Patch({{"metadata", {{"resourceVersion", "40"}}}, {"spec", {{"schedulingGates", nullptr}}}});
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body,
            KubeStatus(409, "Conflict",
                       "Operation cannot be fulfilled on pods \"train-0\": the object has been "
                       "modified; please apply your changes to the latest version and try again",
                       {{"name", "train-0"}, {"kind", "pods"}}));
  EXPECT_EQ(Stored(), Pod({kGate}));
}

TEST_F(FakePodApiTest, AddingAGateIs422Invalid) {
  Plant(Pod({kGate}));
  Answer added =
      Patch({{"spec", {{"schedulingGates", {{{"name", kGate}}, {{"name", "x.io/y"}}}}}}});
  const std::string body =
      "Forbidden: only deletion is allowed, but found new scheduling gate 'x.io/y'";
  EXPECT_EQ(added.status, 422);
  EXPECT_EQ(added.body,
            KubeStatus(422, "Invalid",
                       "Pod \"train-0\" is invalid: spec.schedulingGates[1].name: " + body,
                       {{"name", "train-0"},
                        {"kind", "Pod"},
                        {"causes",
                         {{{"reason", "FieldValueForbidden"},
                           {"message", body},
                           {"field", "spec.schedulingGates[1].name"}}}}}));
  EXPECT_EQ(Stored(), Pod({kGate}));
}

TEST_F(FakePodApiTest, NodeAffinityMayBeAddedToAGatedPodButNotToAnUngatedOne) {
  Plant(Pod({kGate}));
  json pin = RequiredHostnames({{"gpu-a"}});
  Answer pinned = Patch({{"spec", {{"schedulingGates", nullptr}, {"affinity", pin}}}});
  EXPECT_EQ(pinned.status, 200);
  json expected = Pod({}, pin);
  expected["metadata"]["resourceVersion"] = "101";
  EXPECT_EQ(Stored(), expected);

  Answer ungated = Patch({{"spec", {{"affinity", RequiredHostnames({{"gpu-b"}})}}}});
  EXPECT_EQ(ungated.status, 422);
  EXPECT_EQ(ungated.body["reason"], "Invalid");
  EXPECT_NE(ungated.body["message"].get<std::string>().find(
                "Pod \"train-0\" is invalid: spec: Forbidden: pod updates may not change fields "
                "other than `spec.containers[*].image`"),
            std::string::npos)
      << ungated.body;
  EXPECT_EQ(Stored(), expected);
}

TEST_F(FakePodApiTest, ExistingTermsMayGainRequirementsButNotLoseATerm) {
  json two_terms = RequiredHostnames({{"gpu-a"}, {"gpu-b"}});
  Plant(Pod({kGate}, two_terms));
  json narrowed = RequiredHostnames({{"gpu-a", "gpu-c"}, {"gpu-b", "gpu-c"}});
  EXPECT_EQ(Patch({{"spec", {{"affinity", narrowed}}}}).status, 200);
  EXPECT_EQ(Stored()["spec"]["affinity"], narrowed);

  Answer dropped = Patch({{"spec", {{"affinity", RequiredHostnames({{"gpu-a", "gpu-c"}})}}}});
  EXPECT_EQ(dropped.status, 422);
  EXPECT_EQ(dropped.body["details"]["causes"][0]["field"],
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            "nodeSelectorTerms");
  EXPECT_NE(dropped.body["message"].get<std::string>().find(
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed"),
            std::string::npos)
      << dropped.body;
  EXPECT_EQ(Stored()["spec"]["affinity"], narrowed);
}

TEST_F(FakePodApiTest, PatchOtherThanAMergePatchIs415) {
  Plant(Pod({kGate}));
  json remove_gate = {{"spec", {{"schedulingGates", nullptr}}}};
  for (const char* type : {"application/json", "application/strategic-merge-patch+json"}) {
    Answer answer = Send("PATCH", kPod, remove_gate, type);
    EXPECT_EQ(answer.status, 415) << type;
    EXPECT_EQ(answer.body["reason"], "UnsupportedMediaType") << type;
  }
  EXPECT_EQ(Stored(), Pod({kGate}));
  EXPECT_EQ(Send("PATCH", kPod, remove_gate, "application/merge-patch+json; charset=utf-8").status,
            200);
}

TEST_F(FakePodApiTest, AnInjectedPodFaultAnswersTheNextPodRequestOnly) {
  Plant(Pod({kGate}));
  api_.InjectFault("pods", FakeKubeApiServer::RequestKind::kPod,
                   FakeKubeApiServer::Fault::Status(409));
  api_.InjectFault("pods", FakeKubeApiServer::RequestKind::kPod,
                   FakeKubeApiServer::Fault::Status(500));
  json remove_gate = {{"spec", {{"schedulingGates", nullptr}}}};
  EXPECT_EQ(Patch(remove_gate).status, 409);
  Answer failed = Patch(remove_gate);
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(failed.body["reason"], "InternalError");
  EXPECT_EQ(Stored(), Pod({kGate}));
  EXPECT_EQ(Send("GET", "/api/v1/pods").status, 200);  // lists are another kind
  EXPECT_EQ(Patch(remove_gate).status, 200);
}

TEST_F(FakePodApiTest, PostedEventsAreAnswered201AndKeptWithTheirNamespace) {
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", "train-0.17a"}}},
                {"involvedObject", {{"kind", "Pod"}, {"name", "train-0"}}},
                {"reason", "CapacityWaitTimedOut"},
                {"type", "Warning"}};
  Answer posted = Send("POST", kEvents, event, "application/json");
  json expected = event;
  expected["metadata"]["namespace"] = "team-a";
  EXPECT_EQ(posted.status, 201);
  EXPECT_EQ(posted.body, expected);
  EXPECT_EQ(api_.Events(), std::vector<json>{expected});

  json elsewhere = event;
  elsewhere["metadata"]["namespace"] = "team-b";
  EXPECT_EQ(Send("POST", kEvents, elsewhere, "application/json").status, 400);
  EXPECT_EQ(api_.Events().size(), 1u);
}

TEST_F(FakePodApiTest, VersionIs131UntilSetVersionChangesIt) {
  Answer first = Send("GET", "/version");
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, json({{"major", "1"},
                              {"minor", "31"},
                              {"gitVersion", "v1.31.0"},
                              {"platform", "linux/amd64"}}));
  api_.SetVersion("1", "30+", "v1.30.2-eks-1234");
  EXPECT_EQ(Send("GET", "/version").body, json({{"major", "1"},
                                                {"minor", "30+"},
                                                {"gitVersion", "v1.30.2-eks-1234"},
                                                {"platform", "linux/amd64"}}));
}

TEST_F(FakePodApiTest, WithoutTheTokenEveryRouteIs401AndChangesNothing) {
  Plant(Pod({kGate}));
  json remove_gate = {{"spec", {{"schedulingGates", nullptr}}}};
  EXPECT_EQ(Send("GET", kPod, nullptr, "", "").status, 401);
  Answer patched = Send("PATCH", kPod, remove_gate, kMergePatch, "wrong");
  EXPECT_EQ(patched.status, 401);
  EXPECT_EQ(patched.body["reason"], "Unauthorized");
  EXPECT_EQ(Send("POST", kEvents, json::object(), "application/json", "").status, 401);
  EXPECT_EQ(Send("GET", "/version", nullptr, "", "").status, 401);
  EXPECT_EQ(Stored(), Pod({kGate}));
  EXPECT_TRUE(api_.Events().empty());
}

TEST_F(FakePodApiTest, OutagesAndRecordingCoverThePodRoutes) {
  Plant(Pod({kGate}));
  api_.SetOutage(503);
  EXPECT_EQ(Patch({{"spec", {{"schedulingGates", nullptr}}}}).status, 503);
  EXPECT_EQ(Send("GET", "/version").status, 503);
  api_.SetOutage(0);
  EXPECT_EQ(Stored(), Pod({kGate}));
  auto requests = api_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].target, kPod);
  EXPECT_EQ(requests[0].content_type, kMergePatch);
  EXPECT_EQ(json::parse(requests[0].body), json({{"spec", {{"schedulingGates", nullptr}}}}));
  EXPECT_EQ(requests[1].target, "/version");
}

}  // namespace
}  // namespace gpuadmit
