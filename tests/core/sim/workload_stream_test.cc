// The workload stream of `gpuadmit simulate`: JSON lines read into Arrivals, controllers expanded
// into the Pods they would create, errors naming the line.
#include "core/sim/workload_stream.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gpuadmit {
namespace {

using nlohmann::json;

constexpr char kTemplate[] = R"({
  "metadata": {"labels": {"app": "llm"}, "annotations": {"team": "ml"}},
  "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.6.4",
    "resources": {"limits": {"nvidia.com/mig-2g.20gb": "1"}}}]}})";

json Template() { return json::parse(kTemplate); }

// A controller of `kind` named `name` in namespace ml, with labels of its own (not copied).
json ControllerOf(const std::string& api_version, const std::string& kind, const std::string& name,
                  const json& spec) {
  json object = {{"apiVersion", api_version}, {"kind", kind}};
  object["metadata"] = {{"name", name}, {"namespace", "ml"}, {"labels", {{"owner", "me"}}}};
  object["spec"] = spec;
  object["spec"]["template"] = Template();
  return object;
}

std::string Line(const json& object, double at = 0) {
  return json{{"at", at}, {"object", object}}.dump() + "\n";
}

std::vector<Arrival> MustParse(std::string_view text) {
  auto parsed = ParseWorkloadStream(text);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? parsed.value() : std::vector<Arrival>{};
}

std::string ErrorOf(std::string_view text) {
  auto parsed = ParseWorkloadStream(text);
  return parsed.ok() ? "(no error)" : parsed.error().message;
}

std::vector<std::string> Names(const std::vector<Arrival>& arrivals) {
  std::vector<std::string> names;
  for (const Arrival& a : arrivals) names.push_back(a.pod["metadata"]["name"]);
  return names;
}

TEST(WorkloadStream, APodLineIsOneArrivalAsIsWithTheDefaultNamespace) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "solo"}}}};
  pod["spec"] = Template()["spec"];
  auto arrivals = MustParse(R"({"at": 1.5, "duration": 60, "object": )" + pod.dump() + "}");

  ASSERT_EQ(arrivals.size(), 1u);
  EXPECT_EQ(arrivals[0].at, 1.5);
  EXPECT_EQ(arrivals[0].duration, 60.0);
  json want = pod;
  want["metadata"]["namespace"] = "default";
  EXPECT_EQ(arrivals[0].pod, want);
}

TEST(WorkloadStream, DurationAbsentOrNullMeansThePodStays) {
  json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}, {"spec", json::object()}};
  auto arrivals = MustParse(R"({"at": 0, "object": )" + pod.dump() + "}\n" +
                            R"({"at": 2, "duration": null, "object": )" + pod.dump() + "}\n");
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_EQ(arrivals[0].duration, std::nullopt);
  EXPECT_EQ(arrivals[1].duration, std::nullopt);
  EXPECT_EQ(arrivals[1].at, 2.0);
}

TEST(WorkloadStream, AnIntervalSpacesAControllersPods) {
  json deployment = ControllerOf("apps/v1", "Deployment", "llm", {{"replicas", 3}});
  auto arrivals = MustParse(R"({"at": 1, "interval": 0.005, "object": )" + deployment.dump() + "}");
  ASSERT_EQ(arrivals.size(), 3u);
  EXPECT_DOUBLE_EQ(arrivals[0].at, 1.0);
  EXPECT_DOUBLE_EQ(arrivals[1].at, 1.005);
  EXPECT_DOUBLE_EQ(arrivals[2].at, 1.01);
  EXPECT_EQ(ErrorOf(R"({"at": 0, "interval": -1, "object": )" + deployment.dump() + "}"),
            "line 1: \"interval\" is not a number >= 0: -1");
}

TEST(WorkloadStream, ADeploymentOfThreeIsThreePodsOfOneTemplateHashOwnedByItsReplicaSet) {
  json deployment = ControllerOf("apps/v1", "Deployment", "llm", {{"replicas", 3}});
  auto arrivals = MustParse(R"({"at": 4, "duration": 30, "object": )" + deployment.dump() + "}");

  ASSERT_EQ(arrivals.size(), 3u);
  std::string hash = arrivals[0].pod["metadata"]["labels"]["pod-template-hash"];
  ASSERT_EQ(hash.size(), 10u);
  EXPECT_EQ(hash.find_first_not_of("bcdfghjklmnpqrstvwxz2456789"), std::string::npos);
  std::set<std::string> names;
  for (const Arrival& a : arrivals) {
    EXPECT_EQ(a.at, 4.0);
    EXPECT_EQ(a.duration, 30.0);
    std::string name = a.pod["metadata"]["name"];
    names.insert(name);
    ASSERT_EQ(name.size(), std::string("llm-").size() + 10 + 1 + 5) << name;
    EXPECT_EQ(name.substr(0, 15), "llm-" + hash + "-");
    json want = {{"apiVersion", "v1"}, {"kind", "Pod"}};
    want["metadata"] = {{"name", name},
                        {"namespace", "ml"},
                        {"labels", {{"app", "llm"}, {"pod-template-hash", hash}}},
                        {"annotations", {{"team", "ml"}}}};
    want["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                        {"kind", "ReplicaSet"},
                                                        {"name", "llm-" + hash},
                                                        {"controller", true},
                                                        {"blockOwnerDeletion", true}}});
    want["spec"] = Template()["spec"];
    EXPECT_EQ(a.pod, want);
  }
  EXPECT_EQ(names.size(), 3u);
}

TEST(WorkloadStream, TheTemplateHashDependsOnTheTemplateAlone) {
  json a = ControllerOf("apps/v1", "Deployment", "a", {{"replicas", 1}});
  json b = ControllerOf("apps/v1", "Deployment", "b", {{"replicas", 2}});
  json c = a;
  c["spec"]["template"]["metadata"]["labels"]["app"] = "other";
  auto hash = [](const json& object) {
    auto pods = ExpandToPods(object);
    EXPECT_TRUE(pods.ok());
    return pods.ok() ? pods.value()[0]["metadata"]["labels"]["pod-template-hash"] : json();
  };
  EXPECT_EQ(hash(a), hash(b));
  EXPECT_NE(hash(a), hash(c));
}

TEST(WorkloadStream, AStatefulSetNamesItsPodsByOrdinalWithHostnameAndSubdomain) {
  json sts =
      ControllerOf("apps/v1", "StatefulSet", "web", {{"replicas", 3}, {"serviceName", "svc"}});
  auto arrivals = MustParse(Line(sts));

  EXPECT_EQ(Names(arrivals), (std::vector<std::string>{"web-0", "web-1", "web-2"}));
  ASSERT_EQ(arrivals.size(), 3u);
  json want = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  want["metadata"] = {{"name", "web-2"},
                      {"namespace", "ml"},
                      {"labels",
                       {{"app", "llm"},
                        {"statefulset.kubernetes.io/pod-name", "web-2"},
                        {"apps.kubernetes.io/pod-index", "2"}}},
                      {"annotations", {{"team", "ml"}}}};
  want["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                      {"kind", "StatefulSet"},
                                                      {"name", "web"},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}});
  want["spec"] = Template()["spec"];
  want["spec"]["hostname"] = "web-2";
  want["spec"]["subdomain"] = "svc";
  EXPECT_EQ(arrivals[2].pod, want);
}

TEST(WorkloadStream, AJobRunsTheSmallerOfParallelismAndCompletions) {
  json job = ControllerOf("batch/v1", "Job", "train", {{"parallelism", 2}, {"completions", 5}});
  auto arrivals = MustParse(Line(job));
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_NE(arrivals[0].pod["metadata"]["name"], arrivals[1].pod["metadata"]["name"]);

  json want = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  std::string name = arrivals[0].pod["metadata"]["name"];
  EXPECT_EQ(name.substr(0, 6), "train-");
  EXPECT_EQ(name.size(), 11u);
  want["metadata"] = {
      {"name", name},
      {"namespace", "ml"},
      {"labels",
       {{"app", "llm"}, {"batch.kubernetes.io/job-name", "train"}, {"job-name", "train"}}},
      {"annotations", {{"team", "ml"}}}};
  want["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                                      {"kind", "Job"},
                                                      {"name", "train"},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}});
  want["spec"] = Template()["spec"];
  want["spec"]["restartPolicy"] = "Never";
  EXPECT_EQ(arrivals[0].pod, want);

  job["spec"]["completions"] = 1;
  EXPECT_EQ(MustParse(Line(job)).size(), 1u);
}

TEST(WorkloadStream, AJobKeepsOnFailureAndRefusesAlways) {
  json job = ControllerOf("batch/v1", "Job", "train", json::object());
  job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure";
  auto arrivals = MustParse(Line(job));
  ASSERT_EQ(arrivals.size(), 1u);
  EXPECT_EQ(arrivals[0].pod["spec"]["restartPolicy"], "OnFailure");

  job["spec"]["template"]["spec"]["restartPolicy"] = "Always";
  EXPECT_EQ(ErrorOf(Line(job)),
            "line 1: the Job train: a Job's pods restart Never or OnFailure, not \"Always\"");
}

TEST(WorkloadStream, AReplicaSetWithoutReplicasRunsOne) {
  json rs = ControllerOf("apps/v1", "ReplicaSet", "cache", json::object());
  auto arrivals = MustParse(Line(rs));
  ASSERT_EQ(arrivals.size(), 1u);

  std::string name = arrivals[0].pod["metadata"]["name"];
  EXPECT_EQ(name.substr(0, 6), "cache-");
  EXPECT_EQ(name.size(), 11u);
  json want = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  want["metadata"] = {{"name", name},
                      {"namespace", "ml"},
                      {"labels", {{"app", "llm"}}},
                      {"annotations", {{"team", "ml"}}}};
  want["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                      {"kind", "ReplicaSet"},
                                                      {"name", "cache"},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}});
  want["spec"] = Template()["spec"];
  EXPECT_EQ(arrivals[0].pod, want);
}

TEST(WorkloadStream, ControllerPodNamesAreDistinctAcrossManyReplicas) {
  json rs = ControllerOf("apps/v1", "ReplicaSet", "big", {{"replicas", 2000}});
  auto pods = ExpandToPods(rs);
  ASSERT_TRUE(pods.ok());
  std::set<std::string> names;
  for (const json& pod : pods.value()) names.insert(pod["metadata"]["name"]);
  EXPECT_EQ(names.size(), 2000u);
}

TEST(WorkloadStream, CommentsAndBlankLinesAreSkippedButCounted) {
  json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}, {"spec", json::object()}};
  std::string text = "# a workload\n\n   \n  # indented comment\r\n" + Line(pod, 3) + "\n";
  auto arrivals = MustParse(text);
  ASSERT_EQ(arrivals.size(), 1u);
  EXPECT_EQ(arrivals[0].at, 3.0);

  EXPECT_EQ(ErrorOf("# header\n\n{\"at\": 1}\n"), "line 3: no \"object\"");
}

TEST(WorkloadStream, ErrorsNameTheLine) {
  json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}, {"spec", json::object()}};
  std::string ok = Line(pod);
  EXPECT_EQ(ErrorOf(ok + "{not json\n"), "line 2: not JSON");
  EXPECT_EQ(ErrorOf("[1, 2]"), "line 1: not a JSON object");
  EXPECT_EQ(ErrorOf(ok + ok + R"({"object": )" + pod.dump() + "}"),
            "line 3: no \"at\" (seconds from the start)");
  EXPECT_EQ(ErrorOf(R"({"at": "soon", "object": )" + pod.dump() + "}"),
            "line 1: \"at\" is not a number: \"soon\"");
  EXPECT_EQ(ErrorOf(R"({"at": -1, "object": )" + pod.dump() + "}"),
            "line 1: \"at\" is negative: -1");
  EXPECT_EQ(ErrorOf(R"({"at": 0, "duration": "1h", "object": )" + pod.dump() + "}"),
            "line 1: \"duration\" is not a number: \"1h\"");
}

TEST(WorkloadStream, ADaemonSetIsNotReplayed) {
  json ds = ControllerOf("apps/v1", "DaemonSet", "agent", json::object());
  EXPECT_EQ(ErrorOf(Line(ds)),
            "line 1: a DaemonSet is not replayed: its pods follow nodes, not arrivals");
  json svc = {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "s"}}}};
  EXPECT_EQ(ErrorOf(Line(svc)),
            "line 1: a Service is not replayed: the object is a v1 Pod, an apps/v1 Deployment, "
            "ReplicaSet or StatefulSet, or a batch/v1 Job");
  json old = ControllerOf("extensions/v1beta1", "Deployment", "llm", json::object());
  EXPECT_EQ(ErrorOf(Line(old)), "line 1: a Deployment is apps/v1, not extensions/v1beta1");
}

TEST(WorkloadStream, AControllerWithoutATemplateOrWithNegativeReplicasIsAnError) {
  json deployment = ControllerOf("apps/v1", "Deployment", "llm", {{"replicas", 2}});
  deployment["spec"].erase("template");
  EXPECT_EQ(ErrorOf(Line(deployment)), "line 1: the Deployment llm has no spec.template");

  json rs = ControllerOf("apps/v1", "ReplicaSet", "cache", {{"replicas", -1}});
  EXPECT_EQ(ErrorOf(Line(rs)), "line 1: the ReplicaSet cache: spec.replicas is negative: -1");
}

TEST(WorkloadStream, GenerateNameGetsASuffixFromTheLineNumber) {
  json pod = {
      {"kind", "Pod"}, {"metadata", {{"generateName", "worker-"}}}, {"spec", json::object()}};
  std::string text = Line(pod) + Line(pod);
  std::vector<std::string> first = Names(MustParse(text));
  std::vector<std::string> again = Names(MustParse(text));

  EXPECT_EQ(first, again);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0], first[1]);
  for (const std::string& name : first) {
    EXPECT_EQ(name.substr(0, 7), "worker-");
    EXPECT_EQ(name.size(), 12u);
  }

  json nameless = {{"kind", "Pod"}, {"metadata", json::object()}, {"spec", json::object()}};
  EXPECT_EQ(ErrorOf(Line(nameless)), "line 1: a Pod with neither metadata.name nor generateName");
}

}  // namespace
}  // namespace gpuadmit
