// Plan stage 3, the MIG fallback, on clusters built from real H100 node labels: the catalog's
// chains, explicit and multi-tier chains, the nodes that count (nodeSelector, required
// affinity, taints, readiness), reservations, the min-gpu-memory floor, opt-outs, warn or deny.
#include "core/plan/mig_fallback.h"

#include <gtest/gtest.h>

#include "core/plan/planner.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using testing::SnapshotOf;
using Swaps = std::vector<std::pair<std::string, std::string>>;

constexpr char k3g40[] = "nvidia.com/mig-3g.40gb";
constexpr char k2g20[] = "nvidia.com/mig-2g.20gb";
constexpr char k1g20[] = "nvidia.com/mig-1g.20gb";
constexpr char k1g10[] = "nvidia.com/mig-1g.10gb";

// A Ready node with the labels of the real H100 80GB HBM3 node GPU Operator documents (mixed
// strategy), its hostname label set to `name` and `allocatable` as given.
json H100Node(const std::string& name, const std::map<std::string, int>& allocatable) {
  json labels =
      testing::ReadJsonFile("tests/fixtures/nodes/h100-80gb-hbm3-mig-mixed-node-labels.json");
  labels["kubernetes.io/hostname"] = name;
  json alloc = json::object();
  for (const auto& [resource, n] : allocatable) alloc[resource] = std::to_string(n);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable", alloc},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json Cluster(std::initializer_list<json> nodes) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array_t(nodes)}};
}

// A pod spec whose one container asks `count` of `resource`, and its metadata.
struct PodObject {
  json spec;
  json metadata = {{"name", "p"}, {"namespace", "default"}};
};

PodObject Asking(const std::string& resource, int count = 1) {
  std::string n = std::to_string(count);
  return {{{"containers",
            {{{"name", "main"},
              {"image", "vllm/vllm-openai"},
              {"resources", {{"limits", {{resource, n}}}, {"requests", {{resource, n}}}}}}}}}};
}

Decision PlanFor(const PodObject& pod, const InventorySnapshot& s, const Policy& policy = {},
                 const Reservations* reservations = nullptr, std::string_view own_key = {}) {
  // The stage alone: what the others add (placement's affinity, ...) is not under test here.
  PodRequest r = PodRequest::From("default", "Pod default/p", pod.spec, &pod.metadata, true);
  PlanContext context{s, policy, nullptr, reservations, own_key};
  PlanState state{r.needs.containers, r.needs.effective};
  Decision d;
  PlanMigFallback(r, context, state, d);
  return d;
}

Swaps SwapsOf(const Decision& d) {
  Swaps out;
  for (const ResourceSwap& s : d.swaps) out.emplace_back(s.from, s.to);
  return out;
}

std::string FallbackNote(const Decision& d) {
  for (const auto& [k, v] : d.annotations) {
    if (k == "gpuadmit.io/fallback") return v;
  }
  return "";
}

// Reservations that a test sets by hand; single-threaded.
class FixedReservations final : public Reservations {
 public:
  void Hold(const std::string& key, Claim claim) { held_.emplace_back(key, std::move(claim)); }
  int64_t Reserved(std::string_view node, std::string_view resource,
                   std::string_view except_key) const override {
    int64_t n = 0;
    for (const auto& [key, c] : held_) {
      if (key != except_key && c.node == node && c.resource == resource) n += c.count;
    }
    return n;
  }
  bool Holds(std::string_view, std::string_view) const override { return false; }
  bool Commit(const std::string&, const std::string&, const std::vector<Claim>&) override {
    return false;
  }

 private:
  std::vector<std::pair<std::string, Claim>> held_;
};

TEST(MigFallback, AKnownProductFallsBackAlongItsCatalogChainLargestFirst) {
  // 2g.20gb taken; 1g.20gb and 1g.10gb free: the catalog's H100 chain tries 1g.20gb first.
  json cluster = Cluster({H100Node("h100-a", {{k2g20, 1}, {k1g20, 1}, {k1g10, 2}})});
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  Decision d = PlanFor(Asking(k2g20), SnapshotOf(cluster));
  EXPECT_EQ(SwapsOf(d), Swaps({{k2g20, k1g20}}));
  EXPECT_EQ(FallbackNote(d), "2g.20gb->1g.20gb");
  EXPECT_EQ(d.claims, std::vector<Claim>({{"h100-a", k1g20, 1, 1}}));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "  chain 1g.20gb, 1g.10gb (NVIDIA-H100-80GB-HBM3: catalog H100-80GB)"),
            d.trail.end());
}

TEST(MigFallback, AProfileNoNodeIsCutIntoFallsBackAsIfAllWereTaken) {
  // The node is cut into 2g.20gb and 1g.10gb only: a 3g.40gb pod would never schedule as asked.
  json cluster = Cluster({H100Node("h100-a", {{k2g20, 2}, {k1g10, 2}})});
  Decision d = PlanFor(Asking(k3g40), SnapshotOf(cluster));
  EXPECT_EQ(SwapsOf(d), Swaps({{k3g40, k2g20}}));
  EXPECT_EQ(FallbackNote(d), "3g.40gb->2g.20gb");
  EXPECT_EQ(d.claims, std::vector<Claim>({{"h100-a", k2g20, 1, 2}}));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(), std::string(k3g40) + ": no node offers it"),
            d.trail.end());
}

TEST(MigFallback, AProfileOnAClusterWithNoMigDevicesIsLeftUnchanged) {
  json cluster = Cluster({H100Node("h100-a", {{"nvidia.com/gpu", 8}})});
  Decision d = PlanFor(Asking(k3g40), SnapshotOf(cluster));
  EXPECT_TRUE(SwapsOf(d).empty());
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("no node is cut into MIG devices"), std::string::npos);
}

TEST(MigFallback, MediaExtensionProfilesAreNeverAFallbackForAKnownProduct) {
  // The node also offers 1g.10gb+me, which sorts above 1g.10gb; the H100 catalog has no +me.
  json cluster =
      Cluster({H100Node("h100-a", {{k2g20, 1}, {"nvidia.com/mig-1g.10gb+me", 1}, {k1g10, 1}})});
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  EXPECT_EQ(SwapsOf(PlanFor(Asking(k2g20), SnapshotOf(cluster))), Swaps({{k2g20, k1g10}}));
}

TEST(MigFallback, AnUnknownProductFallsBackToTheSmallerProfilesItsNodesOffer) {
  // The demo cluster's simulated 70 GB "NVIDIA-H200" is no catalog product: today's behaviour.
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", k2g20, 7);
  Decision d = PlanFor(Asking(k2g20), SnapshotOf(cluster));
  EXPECT_EQ(SwapsOf(d), Swaps({{k2g20, k1g10}}));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "  chain 1g.10gb (NVIDIA-H200: profiles its nodes offer)"),
            d.trail.end());
}

TEST(MigFallback, ACustomProductInThePolicyGivesSeed003sH200ItsChain) {
  json cluster = testing::DemoCluster();
  testing::AddBoundPods(cluster, "gpu-medium", k2g20, 7);
  Policy policy;
  policy.mig.products.push_back(
      {"NVIDIA-H200", {{"1g.10gb", 7}, {"2g.20gb", 3}, {"3g.40gb", 2}, {"7g.70gb", 1}}});
  Decision d = PlanFor(Asking(k2g20), SnapshotOf(cluster), policy);
  EXPECT_EQ(SwapsOf(d), Swaps({{k2g20, k1g10}}));
  EXPECT_NE(std::find(d.trail.begin(), d.trail.end(),
                      "  chain 1g.10gb (NVIDIA-H200: catalog NVIDIA-H200)"),
            d.trail.end());
}

TEST(MigFallback, AnExplicitChainIsWalkedInItsOrderAcrossTiers) {
  // 3g.40gb -> 2g.20gb -> 1g.10gb; 3g.40gb and 2g.20gb taken, 1g.20gb free but not in the chain.
  json cluster = Cluster({H100Node("h100-a", {{k3g40, 1}, {k2g20, 1}, {k1g20, 1}, {k1g10, 2}})});
  testing::AddBoundPods(cluster, "h100-a", k3g40, 1);
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  Policy policy;
  policy.mig.chains.push_back({"3g.40gb", {"2g.20gb", "1g.10gb"}});
  Decision d = PlanFor(Asking(k3g40), SnapshotOf(cluster), policy);
  EXPECT_EQ(SwapsOf(d), Swaps({{k3g40, k1g10}}));
  EXPECT_EQ(FallbackNote(d), "3g.40gb->1g.10gb");
  // Without the chain the catalog's order picks 1g.20gb, the largest free.
  EXPECT_EQ(SwapsOf(PlanFor(Asking(k3g40), SnapshotOf(cluster))), Swaps({{k3g40, k1g20}}));
}

TEST(MigFallback, NodesThePodMayNotUseDoNotCount) {
  // h100-a has a free 2g.20gb, h100-b only 1g.10gb. Each constraint below rules h100-a out.
  auto cluster = [] {
    return Cluster(
        {H100Node("h100-a", {{k2g20, 1}, {k1g10, 1}}), H100Node("h100-b", {{k1g10, 2}})});
  };
  auto falls_back = [](const PodObject& pod, const json& c) {
    return SwapsOf(PlanFor(pod, SnapshotOf(c))) == Swaps({{k2g20, k1g10}});
  };
  EXPECT_FALSE(falls_back(Asking(k2g20), cluster()));  // baseline: h100-a is usable

  PodObject selector = Asking(k2g20);
  selector.spec["nodeSelector"] = {{"kubernetes.io/hostname", "h100-b"}};
  EXPECT_TRUE(falls_back(selector, cluster()));

  PodObject affinity = Asking(k2g20);
  affinity.spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms",
       {{{"matchExpressions",
          {{{"key", "kubernetes.io/hostname"}, {"operator", "NotIn"}, {"values", {"h100-a"}}}}}}}}};
  EXPECT_TRUE(falls_back(affinity, cluster()));

  json tainted = cluster();
  tainted["items"][0]["spec"]["taints"] = {
      {{"key", "dedicated"}, {"value", "training"}, {"effect", "NoSchedule"}}};
  EXPECT_TRUE(falls_back(Asking(k2g20), tainted));
  PodObject tolerating = Asking(k2g20);
  tolerating.spec["tolerations"] = {{{"key", "dedicated"}, {"operator", "Exists"}}};
  EXPECT_FALSE(falls_back(tolerating, tainted));

  json not_ready = cluster();
  not_ready["items"][0]["status"]["conditions"][0]["status"] = "False";
  EXPECT_TRUE(falls_back(Asking(k2g20), not_ready));
}

TEST(MigFallback, FreeCountsAreNetOfReservationsButNotTheirOwn) {
  InventorySnapshot s = SnapshotOf(Cluster({H100Node("h100-a", {{k2g20, 1}, {k1g10, 2}})}));
  FixedReservations held;
  held.Hold("other-uid", {"h100-a", k2g20, 1, 1});
  EXPECT_EQ(SwapsOf(PlanFor(Asking(k2g20), s, {}, &held)), Swaps({{k2g20, k1g10}}));
  EXPECT_EQ(SwapsOf(PlanFor(Asking(k2g20), s, {}, &held, "other-uid")), Swaps{});
  held.Hold("third-uid", {"h100-a", k1g10, 2, 2});
  Decision none = PlanFor(Asking(k2g20), s, {}, &held);
  EXPECT_EQ(SwapsOf(none), Swaps{});
  EXPECT_EQ(none.warnings, std::vector<std::string>(
                               {"nvidia.com/mig-2g.20gb is free on no node Pod default/p may "
                                "use, and no smaller MIG profile is either; left unchanged"}));
}

TEST(MigFallback, NeverBelowTheDeclaredMinimumGpuMemory) {
  json cluster = Cluster({H100Node("h100-a", {{k3g40, 1}, {k2g20, 1}, {k1g20, 1}, {k1g10, 2}})});
  testing::AddBoundPods(cluster, "h100-a", k3g40, 1);
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  InventorySnapshot s = SnapshotOf(cluster);
  auto with_floor = [](const std::string& value,
                       const std::string& key = "gpuadmit.io/min-gpu-memory") {
    PodObject pod = Asking(k3g40);
    pod.metadata["annotations"] = {{key, value}};
    return pod;
  };
  EXPECT_EQ(SwapsOf(PlanFor(with_floor("20Gi"), s)), Swaps({{k3g40, k1g20}}));   // 20480 fits
  EXPECT_EQ(SwapsOf(PlanFor(with_floor("20480"), s)), Swaps({{k3g40, k1g20}}));  // bare MiB
  EXPECT_EQ(SwapsOf(PlanFor(with_floor("10Gi", "gpu-autoscaler.io/min-gpu-memory"), s)),
            Swaps({{k3g40, k1g20}}));
  // 1g.20gb taken too: with a 15Gi floor 1g.10gb is not a way out.
  testing::AddBoundPods(cluster, "h100-a", k1g20, 1);
  InventorySnapshot tight = SnapshotOf(cluster);
  EXPECT_EQ(SwapsOf(PlanFor(with_floor("10Gi"), tight)), Swaps({{k3g40, k1g10}}));
  Decision floored = PlanFor(with_floor("15Gi"), tight);
  EXPECT_EQ(SwapsOf(floored), Swaps{});
  EXPECT_EQ(floored.warnings,
            std::vector<std::string>({"nvidia.com/mig-3g.40gb is free on no node Pod default/p may "
                                      "use, and no smaller MIG profile with at least 15360 MiB "
                                      "(min-gpu-memory) is either; left unchanged"}));
  Decision unreadable = PlanFor(with_floor("lots"), tight);
  EXPECT_EQ(SwapsOf(unreadable), Swaps{});
  ASSERT_EQ(unreadable.warnings.size(), 1u);
  EXPECT_TRUE(unreadable.warnings[0].starts_with("gpuadmit: gpuadmit.io/min-gpu-memory \"lots\": "))
      << unreadable.warnings[0];
}

TEST(MigFallback, APodOptsOutWithAnAnnotation) {
  json cluster = Cluster({H100Node("h100-a", {{k2g20, 1}, {k1g10, 2}})});
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  InventorySnapshot s = SnapshotOf(cluster);
  for (const char* key : {"gpuadmit.io/mig-fallback", "gpu-autoscaler.io/mig-fallback"}) {
    PodObject pod = Asking(k2g20);
    pod.metadata["annotations"] = {{key, "false"}};
    Decision d = PlanFor(pod, s);
    EXPECT_EQ(SwapsOf(d), Swaps{}) << key;
    EXPECT_TRUE(d.warnings.empty()) << key;
    EXPECT_TRUE(d.claims.empty()) << key;
  }
  PodObject yes = Asking(k2g20);
  yes.metadata["annotations"] = {{"gpuadmit.io/mig-fallback", "true"}};
  EXPECT_EQ(SwapsOf(PlanFor(yes, s)), Swaps({{k2g20, k1g10}}));
}

TEST(MigFallback, NothingFreeWarnsOrDeniesAsThePolicySays) {
  json cluster = Cluster({H100Node("h100-a", {{k2g20, 1}, {k1g10, 1}})});
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  testing::AddBoundPods(cluster, "h100-a", k1g10, 1);
  InventorySnapshot s = SnapshotOf(cluster);
  Decision warned = PlanFor(Asking(k2g20), s);
  EXPECT_FALSE(warned.deny.has_value());
  EXPECT_EQ(warned.warnings.size(), 1u);
  EXPECT_FALSE(warned.Changes());
  Policy deny;
  deny.mig.on_exhausted = ExhaustedAction::kDeny;
  Decision denied = PlanFor(Asking(k2g20), s, deny);
  EXPECT_EQ(denied.deny,
            "nvidia.com/mig-2g.20gb is free on no node Pod default/p may use, and "
            "no smaller MIG profile is either");
}

TEST(MigFallback, OnlyTheGpuProductsOfferingTheAskedProfileCount) {
  // 1g.10gb free only on a node of another product: the pod stays on H100s, unchanged.
  json other = H100Node("other", {{k1g10, 4}});
  other["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A30";
  other["metadata"]["labels"]["nvidia.com/gpu.memory"] = "24576";
  json cluster = Cluster({H100Node("h100-a", {{k2g20, 1}}), other});
  testing::AddBoundPods(cluster, "h100-a", k2g20, 1);
  EXPECT_EQ(SwapsOf(PlanFor(Asking(k2g20), SnapshotOf(cluster))), Swaps{});
}

}  // namespace
}  // namespace gpuadmit
