#include "core/kube/scheduling.h"

#include <gtest/gtest.h>

#include "core/kube/kube_objects.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

NodeFacts Node() {
  NodeFacts n;
  n.name = "gpu-1";
  n.ready = true;
  n.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/gpu.count", "8"},
              {"zone", "a"}};
  return n;
}

bool Runs(const std::string& spec_json, const NodeFacts& node = Node()) {
  return CanRunOn(ReadSchedulingConstraints(json::parse(spec_json)), node);
}

std::string Affinity(const std::string& terms) {
  return R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
      "nodeSelectorTerms":)" +
         terms + "}}}}";
}

TEST(CanRunOn, RequiredAffinityOperatorsMatchAsTheSchedulerDoes) {
  EXPECT_TRUE(Runs(
      Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}])")));
  EXPECT_FALSE(Runs(
      Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"NotIn","values":["a"]}]}])")));
  EXPECT_TRUE(Runs(Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"Exists"}]}])")));
  EXPECT_FALSE(
      Runs(Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"DoesNotExist"}]}])")));
  EXPECT_TRUE(Runs(Affinity(
      R"([{"matchExpressions":[{"key":"nvidia.com/gpu.count","operator":"Gt","values":["4"]}]}])")));
  EXPECT_FALSE(Runs(Affinity(
      R"([{"matchExpressions":[{"key":"nvidia.com/gpu.count","operator":"Lt","values":["4"]}]}])")));
  EXPECT_FALSE(
      Runs(Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"Gt","values":["1"]}]}])")));
  EXPECT_TRUE(Runs(Affinity(
      R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-1"]}]}])")));
  EXPECT_FALSE(Runs(Affinity(
      R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-2"]}]}])")));
}

TEST(CanRunOn, TermsAreOredAndExpressionsInsideATermAnded) {
  EXPECT_TRUE(
      Runs(Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]},
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}])")));
  EXPECT_FALSE(Runs(Affinity(R"([{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},
      {"key":"zone","operator":"NotIn","values":["a"]}]}])")));
  EXPECT_FALSE(Runs(Affinity(R"([{}])")));  // an empty term matches nothing
}

TEST(CanRunOn, TaintsNeedTolerationsAndCordonedOrNotReadyNodesTakeNothing) {
  NodeFacts tainted = Node();
  tainted.taints.push_back({"nvidia.com/gpu", "true", "NoSchedule"});
  EXPECT_FALSE(Runs("{}", tainted));
  EXPECT_TRUE(Runs(R"({"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}]})", tainted));
  EXPECT_TRUE(
      Runs(R"({"tolerations":[{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}]})",
           tainted));
  EXPECT_FALSE(Runs(R"({"tolerations":[{"key":"nvidia.com/gpu","value":"false"}]})", tainted));
  EXPECT_TRUE(Runs(R"({"tolerations":[{"operator":"Exists"}]})", tainted));
  tainted.taints[0].effect = "PreferNoSchedule";
  EXPECT_TRUE(Runs("{}", tainted));
  NodeFacts cordoned = Node();
  cordoned.unschedulable = true;
  EXPECT_FALSE(Runs("{}", cordoned));
  NodeFacts not_ready = Node();
  not_ready.ready = false;
  EXPECT_FALSE(Runs("{}", not_ready));
  EXPECT_FALSE(Runs(R"({"nodeSelector":{"zone":"b"}})"));
}

TEST(GpuProductsOf, ReadsTheNodeSelectorOrEveryRequiredTerm) {
  using Products = std::vector<std::string>;
  EXPECT_EQ(GpuProductsOf(json::parse("{}")), Products{});
  EXPECT_EQ(GpuProductsOf(json::parse(R"({"nodeSelector":{"nvidia.com/gpu.product":"Tesla-T4"}})")),
            Products{"Tesla-T4"});
  // Sorted and without repeats, across the ORed terms.
  EXPECT_EQ(GpuProductsOf(json::parse(Affinity(R"([
      {"matchExpressions":[{"key":"nvidia.com/gpu.product","operator":"In",
                            "values":["Tesla-V100-SXM2-32GB","Tesla-T4"]}]},
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},
                           {"key":"nvidia.com/gpu.product","operator":"In",
                            "values":["Tesla-T4","NVIDIA-A10"]}]}])"))),
            (Products{"NVIDIA-A10", "Tesla-T4", "Tesla-V100-SXM2-32GB"}));
  // A term that does not name the product allows any; so does NotIn.
  EXPECT_EQ(GpuProductsOf(json::parse(Affinity(R"([
      {"matchExpressions":[{"key":"nvidia.com/gpu.product","operator":"In","values":["Tesla-T4"]}]},
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}])"))),
            Products{});
  EXPECT_EQ(GpuProductsOf(json::parse(Affinity(R"([
      {"matchExpressions":[{"key":"nvidia.com/gpu.product","operator":"NotIn",
                            "values":["Tesla-T4"]}]}])"))),
            Products{});
}

}  // namespace
}  // namespace gpuadmit
