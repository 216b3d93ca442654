// The MIG catalog: NVIDIA's documented profile geometries, product matching on real GFD labels,
// the default and explicit chains, and the smallest profile that fits a memory need.
#include "core/plan/mig_catalog.h"

#include <gtest/gtest.h>

#include "core/json/yaml_json.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
using Profiles = std::vector<std::pair<std::string, int>>;
using Names = std::vector<std::string>;

Profiles ProfilesOf(const MigProductSpec& p) {
  Profiles out;
  for (const MigCatalogProfile& e : p.profiles) out.emplace_back(e.name, e.per_gpu);
  return out;
}

// The product a node's GFD labels name, or "" when the catalog knows none.
std::string Match(const MigCatalog& catalog, const json& labels) {
  std::string product = labels.value("nvidia.com/gpu.product", "");
  int64_t memory = std::stoll(labels.value("nvidia.com/gpu.memory", "0"));
  const MigProductSpec* spec = catalog.ProductFor(product, memory);
  return spec == nullptr ? "" : spec->product;
}

json NodeLabels(const std::string& fixture) {
  std::string text = testing::ReadSourceFile("tests/fixtures/nodes/" + fixture);
  if (fixture.ends_with(".json")) return json::parse(text);
  auto node = YamlToJson(text);
  EXPECT_TRUE(node.ok()) << fixture;
  return node.value()["metadata"]["labels"];
}

TEST(MigCatalog, BuiltInsAreNvidiasDocumentedGeometries) {
  std::map<std::string, Profiles> table;
  for (const MigProductSpec& p : BuiltinMigProducts()) table[p.product] = ProfilesOf(p);
  const Profiles k80 = {{"7g.80gb", 1}, {"4g.40gb", 1}, {"3g.40gb", 2},
                        {"2g.20gb", 3}, {"1g.20gb", 4}, {"1g.10gb", 7}};
  EXPECT_EQ(table, (std::map<std::string, Profiles>{
                       {"A30-24GB", {{"4g.24gb", 1}, {"2g.12gb", 2}, {"1g.6gb", 4}}},
                       {"A100-40GB",
                        {{"7g.40gb", 1},
                         {"4g.20gb", 1},
                         {"3g.20gb", 2},
                         {"2g.10gb", 3},
                         {"1g.10gb", 4},
                         {"1g.5gb", 7}}},
                       {"A100-80GB", k80},
                       {"H100-80GB", k80},
                       {"H100-NVL-94GB",
                        {{"7g.94gb", 1},
                         {"4g.47gb", 1},
                         {"3g.47gb", 2},
                         {"2g.24gb", 3},
                         {"1g.24gb", 4},
                         {"1g.12gb", 7}}},
                       {"H200-141GB",
                        {{"7g.141gb", 1},
                         {"4g.71gb", 1},
                         {"3g.71gb", 2},
                         {"2g.35gb", 3},
                         {"1g.35gb", 4},
                         {"1g.18gb", 7}}},
                       {"B200-180GB",
                        {{"7g.180gb", 1},
                         {"4g.90gb", 1},
                         {"3g.90gb", 2},
                         {"2g.45gb", 3},
                         {"1g.45gb", 4},
                         {"1g.23gb", 7}}},
                   }));
}

TEST(MigCatalog, NoBuiltInProductHandsOutMoreThanSevenSlices) {
  for (const MigProductSpec& p : BuiltinMigProducts()) {
    for (const MigCatalogProfile& e : p.profiles) {
      int slices = std::stoi(e.name.substr(0, e.name.find('g')));
      EXPECT_LE(slices * e.per_gpu, 7) << p.product << " " << e.name;
    }
  }
}

TEST(MigCatalog, ProfileMemoryIsTheNameReadInGiB) {
  EXPECT_EQ(MigProfileMemoryMib("1g.10gb"), 10240);
  EXPECT_EQ(MigProfileMemoryMib("7g.141gb"), 141 * 1024);
  EXPECT_EQ(MigProfileMemoryMib("1g.10gb+me"), 10240);
  EXPECT_EQ(MigProfileMemoryMib("gpu"), 0);
  EXPECT_EQ(ProductMemoryMib(BuiltinMigProducts().front()), 24 * 1024);  // A30
}

TEST(MigCatalog, RealNodeLabelsMatchTheirProduct) {
  MigPolicy defaults;
  MigCatalog catalog(defaults);
  EXPECT_EQ(Match(catalog, NodeLabels("h100-80gb-hbm3-mig-mixed-node-labels.json")), "H100-80GB");
  EXPECT_EQ(Match(catalog, NodeLabels("h100-80gb-hbm3-mig-single-all-1g.10gb-node-labels.json")),
            "H100-80GB");
  for (const char* a100 : {"a100-sxm4-40gb-mig-7g.40gb-kubectl-edit.yaml",
                           "a100-sxm4-40gb-mig-mixed-2x1g.5gb-1x2g.10gb-kubectl-edit.yaml",
                           "a100-sxm4-40gb-mig-mixed-3x1g.5gb-1x2g.10gb-kubectl-edit.yaml"}) {
    EXPECT_EQ(Match(catalog, NodeLabels(a100)), "A100-40GB") << a100;
  }
  EXPECT_EQ(Match(catalog, NodeLabels("tesla-t4-x2-gpu-2-kubectl-edit.yaml")), "");
}

TEST(MigCatalog, LabelsAsGfdWritesThemPickFamilyVariantAndSize) {
  MigPolicy defaults;
  MigCatalog catalog(defaults);
  auto name = [&](std::string_view label, int64_t memory = 0) {
    const MigProductSpec* p = catalog.ProductFor(label, memory);
    return p == nullptr ? std::string() : p->product;
  };
  EXPECT_EQ(name("NVIDIA-A100-SXM4-40GB"), "A100-40GB");
  EXPECT_EQ(name("NVIDIA-A100-PCIE-40GB"), "A100-40GB");
  EXPECT_EQ(name("NVIDIA-A100-80GB-PCIe"), "A100-80GB");
  EXPECT_EQ(name("NVIDIA-A100-SXM4-80GB", 81920), "A100-80GB");
  EXPECT_EQ(name("A100-SXM4-40GB"), "A100-40GB");  // older GFD: no vendor prefix
  // No size in the label: the memory label decides, else the family's first (40 GB).
  EXPECT_EQ(name("NVIDIA-A100-SXM4", 81920), "A100-80GB");
  EXPECT_EQ(name("NVIDIA-A100-SXM4"), "A100-40GB");
  EXPECT_EQ(name("NVIDIA-H100-80GB-HBM3", 81559), "H100-80GB");
  EXPECT_EQ(name("NVIDIA-H100-PCIe", 81559), "H100-80GB");
  EXPECT_EQ(name("NVIDIA-H100-NVL", 95830), "H100-NVL-94GB");
  EXPECT_EQ(name("NVIDIA-H200", 143771), "H200-141GB");  // nvidia-smi capture: 143771 MiB
  EXPECT_EQ(name("NVIDIA-A30", 24576), "A30-24GB");
  EXPECT_EQ(name("NVIDIA-B200", 183359), "B200-180GB");
  // GFD's single strategy appends the profile and reports the slice's memory.
  EXPECT_EQ(name("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 4864), "A100-40GB");
  EXPECT_EQ(name("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", 9984), "H100-80GB");
  // Not these: a GH200 is not an H200, a T4 has no MIG, a 70 GB "H200" is not the 141 GB one.
  EXPECT_EQ(name("NVIDIA-GH200-480GB"), "");
  EXPECT_EQ(name("Tesla-T4", 15360), "");
  EXPECT_EQ(name("NVIDIA-H200", 71680), "");
  EXPECT_EQ(name("NVIDIA-H100-96GB"), "");
}

TEST(MigCatalog, PolicyProductsMatchTheirLabelExactlyAndReplaceBuiltIns) {
  MigPolicy policy;
  // Seed 003's simulated 70 GB H200, named as its nodes' label.
  policy.products.push_back(
      {"NVIDIA-H200", {{"7g.70gb", 1}, {"3g.40gb", 2}, {"2g.20gb", 3}, {"1g.10gb", 7}}});
  policy.products.push_back({"H100-80GB", {{"7g.80gb", 1}, {"1g.10gb", 7}}});
  MigCatalog catalog(policy);
  ASSERT_NE(catalog.ProductFor("NVIDIA-H200", 71680), nullptr);
  EXPECT_EQ(catalog.ProductFor("NVIDIA-H200", 71680), &policy.products[0]);
  EXPECT_EQ(catalog.ProductFor("nvidia-h200-MIG-1g.10gb"), &policy.products[0]);
  EXPECT_EQ(catalog.ProductFor("NVIDIA-H100-80GB-HBM3", 81559), &policy.products[1]);
  EXPECT_EQ(catalog.Find("h100-80gb"), &policy.products[1]);
  EXPECT_EQ(catalog.Find("A30-24GB")->product, "A30-24GB");
  EXPECT_EQ(catalog.Find("T4"), nullptr);
}

TEST(MigCatalog, DefaultChainIsTheSmallerProfilesLargestFirst) {
  MigPolicy defaults;
  MigCatalog catalog(defaults);
  const MigProductSpec& h100 = *catalog.Find("H100-80GB");
  EXPECT_EQ(DefaultChain(h100, "2g.20gb"), Names({"1g.20gb", "1g.10gb"}));
  EXPECT_EQ(DefaultChain(h100, "4g.40gb"), Names({"3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb"}));
  EXPECT_EQ(DefaultChain(h100, "7g.80gb"),
            Names({"4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb"}));
  EXPECT_EQ(DefaultChain(h100, "1g.10gb"), Names{});
  EXPECT_EQ(DefaultChain(*catalog.Find("A100-40GB"), "2g.10gb"), Names({"1g.10gb", "1g.5gb"}));
  EXPECT_EQ(DefaultChain(*catalog.Find("A30-24GB"), "4g.24gb"), Names({"2g.12gb", "1g.6gb"}));
  EXPECT_EQ(DefaultChain(h100, "not-a-profile"), Names{});
}

TEST(MigCatalog, AnExplicitChainReplacesTheDefaultForItsFromOnly) {
  MigPolicy policy;
  policy.chains.push_back({"3g.40gb", {"2g.20gb", "1g.10gb"}});
  MigCatalog catalog(policy);
  const MigProductSpec& h100 = *catalog.Find("H100-80GB");
  EXPECT_EQ(catalog.Chain(h100, "3g.40gb"), Names({"2g.20gb", "1g.10gb"}));
  EXPECT_EQ(catalog.Chain(h100, "2g.20gb"), Names({"1g.20gb", "1g.10gb"}));
  EXPECT_EQ(catalog.ExplicitChain("2g.20gb"), nullptr);
  ASSERT_NE(catalog.ExplicitChain("3g.40gb"), nullptr);
  EXPECT_EQ(catalog.ExplicitChain("3g.40gb")->to, Names({"2g.20gb", "1g.10gb"}));
}

TEST(MigCatalog, SmallestFittingIsTheLeastMemoryThatCoversTheNeed) {
  MigPolicy defaults;
  MigCatalog catalog(defaults);
  const MigProductSpec& h100 = *catalog.Find("H100-80GB");
  EXPECT_EQ(SmallestFitting(h100, 10 * 1024), "1g.10gb");  // "10Gi" fits a 1g.10gb
  EXPECT_EQ(SmallestFitting(h100, 12000), "1g.20gb");      // seed 001's 13B/7B need
  EXPECT_EQ(SmallestFitting(h100, 20000), "1g.20gb");      // seed 001's 70B need; 1 slice
  EXPECT_EQ(SmallestFitting(h100, 30 * 1024), "3g.40gb");
  EXPECT_EQ(SmallestFitting(h100, 0), "1g.10gb");
  EXPECT_EQ(SmallestFitting(h100, 81 * 1024), std::nullopt);
  EXPECT_EQ(SmallestFitting(*catalog.Find("A30-24GB"), 7000), "2g.12gb");
  EXPECT_EQ(SmallestFitting(*catalog.Find("A100-40GB"), 5 * 1024), "1g.5gb");
  EXPECT_EQ(SmallestFitting(*catalog.Find("H200-141GB"), 100 * 1024), "7g.141gb");
}

}  // namespace
}  // namespace gpuadmit
