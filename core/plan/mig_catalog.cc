#include "core/plan/mig_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>

#include "core/kube/mig_resource.h"

namespace gpuadmit {
namespace {

// NVIDIA's MIG user guide, "Supported MIG Profiles": each product's GPU instance profiles and
// how many of each fit on one GPU. The "+me" and "-me" media variants are left out: fallback
// never moves a pod onto or off media engines.
struct BuiltinProfile {
  std::string_view name;
  int per_gpu;
};
struct BuiltinProduct {
  std::string_view name;
  std::string_view family;   // the label token that names the GPU: "A100"
  std::string_view variant;  // a second token that must be present: "NVL"; "" for none
  BuiltinProfile profiles[6];
};

// Within a family, entries without a size token in the label are tried in this order.
constexpr BuiltinProduct kBuiltins[] = {
    {"A30-24GB", "A30", "", {{"4g.24gb", 1}, {"2g.12gb", 2}, {"1g.6gb", 4}}},
    {"A100-40GB",
     "A100",
     "",
     {{"7g.40gb", 1},
      {"4g.20gb", 1},
      {"3g.20gb", 2},
      {"2g.10gb", 3},
      {"1g.10gb", 4},
      {"1g.5gb", 7}}},
    {"A100-80GB",
     "A100",
     "",
     {{"7g.80gb", 1},
      {"4g.40gb", 1},
      {"3g.40gb", 2},
      {"2g.20gb", 3},
      {"1g.20gb", 4},
      {"1g.10gb", 7}}},
    {"H100-80GB",
     "H100",
     "",
     {{"7g.80gb", 1},
      {"4g.40gb", 1},
      {"3g.40gb", 2},
      {"2g.20gb", 3},
      {"1g.20gb", 4},
      {"1g.10gb", 7}}},
    {"H100-NVL-94GB",
     "H100",
     "NVL",
     {{"7g.94gb", 1},
      {"4g.47gb", 1},
      {"3g.47gb", 2},
      {"2g.24gb", 3},
      {"1g.24gb", 4},
      {"1g.12gb", 7}}},
    {"H200-141GB",
     "H200",
     "",
     {{"7g.141gb", 1},
      {"4g.71gb", 1},
      {"3g.71gb", 2},
      {"2g.35gb", 3},
      {"1g.35gb", 4},
      {"1g.18gb", 7}}},
    {"B200-180GB",
     "B200",
     "",
     {{"7g.180gb", 1},
      {"4g.90gb", 1},
      {"3g.90gb", 2},
      {"2g.45gb", 3},
      {"1g.45gb", 4},
      {"1g.23gb", 7}}},
};

// A label names a product within 10% of its memory: GFD reports what the driver sees (an 80 GB
// H100 says 81559 MiB, a 141 GB H200 143771), never the marketing figure exactly.
constexpr int64_t kMemoryTolerancePercent = 10;

std::optional<MigProfile> ParseProfile(std::string_view name) {
  return ParseMigResource(std::string(kMigResourcePrefix) + std::string(name));
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

// The label without GFD's single-strategy suffix: "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb" ->
// "NVIDIA-H100-80GB-HBM3". Sets `had_suffix`.
std::string_view WithoutMigSuffix(std::string_view label, bool& had_suffix) {
  for (size_t at = label.find('-'); at != std::string_view::npos; at = label.find('-', at + 1)) {
    std::string_view rest = label.substr(at + 1);
    if (rest.size() > 4 && EqualsIgnoringCase(rest.substr(0, 4), "MIG-")) {
      had_suffix = true;
      return label.substr(0, at);
    }
  }
  had_suffix = false;
  return label;
}

// Upper-cased tokens between '-', '_' and spaces.
std::vector<std::string> Tokens(std::string_view label) {
  std::vector<std::string> tokens(1);
  for (char c : label) {
    if (c == '-' || c == '_' || c == ' ') {
      if (!tokens.back().empty()) tokens.emplace_back();
    } else {
      tokens.back() += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  if (tokens.back().empty()) tokens.pop_back();
  return tokens;
}

// "80GB" -> 80; 0 for any other token.
int SizeToken(std::string_view token) {
  if (token.size() < 3 || !token.ends_with("GB")) return 0;
  int gb = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size() - 2, gb);
  return ec == std::errc() && end == token.data() + token.size() - 2 ? gb : 0;
}

bool Near(int64_t actual_mib, int64_t nominal_mib) {
  int64_t off = actual_mib > nominal_mib ? actual_mib - nominal_mib : nominal_mib - actual_mib;
  return off * 100 <= nominal_mib * kMemoryTolerancePercent;
}

bool Contains(const std::vector<std::string>& tokens, std::string_view token) {
  return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
}

}  // namespace

const std::vector<MigProductSpec>& BuiltinMigProducts() {
  static const std::vector<MigProductSpec> kProducts = [] {
    std::vector<MigProductSpec> out;
    for (const BuiltinProduct& b : kBuiltins) {
      MigProductSpec spec;
      spec.product = std::string(b.name);
      for (const BuiltinProfile& p : b.profiles) {
        if (!p.name.empty()) spec.profiles.push_back({std::string(p.name), p.per_gpu});
      }
      out.push_back(std::move(spec));
    }
    return out;
  }();
  return kProducts;
}

int64_t MigProfileMemoryMib(std::string_view profile) {
  auto p = ParseProfile(profile);
  return p ? int64_t{p->memory_gb} * 1024 : 0;
}

int64_t ProductMemoryMib(const MigProductSpec& product) {
  int64_t most = 0;
  for (const MigCatalogProfile& p : product.profiles) {
    most = std::max(most, MigProfileMemoryMib(p.name));
  }
  return most;
}

bool HasProfile(const MigProductSpec& product, std::string_view profile) {
  return std::any_of(product.profiles.begin(), product.profiles.end(),
                     [&](const MigCatalogProfile& p) { return p.name == profile; });
}

std::vector<std::string> DefaultChain(const MigProductSpec& product, std::string_view profile) {
  auto wanted = ParseProfile(profile);
  if (!wanted) return {};
  std::vector<MigProfile> smaller;
  for (const MigCatalogProfile& entry : product.profiles) {
    auto p = ParseProfile(entry.name);
    if (p && p->SmallerThan(*wanted)) smaller.push_back(std::move(*p));
  }
  std::sort(smaller.begin(), smaller.end(),
            [](const MigProfile& a, const MigProfile& b) { return b.SmallerThan(a); });
  std::vector<std::string> out;
  std::transform(smaller.begin(), smaller.end(), std::back_inserter(out),
                 [](MigProfile& p) { return std::move(p.name); });
  return out;
}

std::optional<std::string> SmallestFitting(const MigProductSpec& product, int64_t memory_mib) {
  std::optional<MigProfile> best;
  for (const MigCatalogProfile& entry : product.profiles) {
    auto p = ParseProfile(entry.name);
    if (!p || int64_t{p->memory_gb} * 1024 < memory_mib) continue;
    if (!best || p->SmallerThan(*best)) best = std::move(p);
  }
  if (!best) return std::nullopt;
  return best->name;
}

const MigProductSpec* MigCatalog::Find(std::string_view name) const {
  for (const MigProductSpec& p : policy_.products) {
    if (EqualsIgnoringCase(p.product, name)) return &p;
  }
  for (const MigProductSpec& p : BuiltinMigProducts()) {
    if (EqualsIgnoringCase(p.product, name)) return &p;
  }
  return nullptr;
}

const MigProductSpec* MigCatalog::ProductFor(std::string_view gpu_product,
                                             int64_t memory_mib) const {
  bool mig_suffix = false;
  std::string_view label = WithoutMigSuffix(gpu_product, mig_suffix);
  if (mig_suffix) memory_mib = 0;  // the slice's memory, not the GPU's
  for (const MigProductSpec& p : policy_.products) {
    if (EqualsIgnoringCase(p.product, gpu_product) || EqualsIgnoringCase(p.product, label)) {
      return &p;
    }
  }

  std::vector<std::string> tokens = Tokens(label);
  std::vector<const BuiltinProduct*> candidates;
  for (const BuiltinProduct& b : kBuiltins) {
    if (Contains(tokens, b.family) && (b.variant.empty() || Contains(tokens, b.variant))) {
      candidates.push_back(&b);
    }
  }
  // A variant named in the label wins over the plain model: "H100-NVL" is not the 80 GB H100.
  if (std::any_of(candidates.begin(), candidates.end(),
                  [](const BuiltinProduct* b) { return !b->variant.empty(); })) {
    std::erase_if(candidates, [](const BuiltinProduct* b) { return b->variant.empty(); });
  }
  auto sized = std::find_if(tokens.begin(), tokens.end(),
                            [](const std::string& t) { return SizeToken(t) != 0; });
  int size_gb = sized == tokens.end() ? 0 : SizeToken(*sized);

  for (const BuiltinProduct* b : candidates) {
    const MigProductSpec* spec = Find(b->name);  // a policy product may replace the built-in
    if (spec == nullptr) continue;
    int64_t spec_mib = ProductMemoryMib(*spec);
    if (size_gb != 0 && int64_t{size_gb} * 1024 != spec_mib) continue;
    if (memory_mib > 0 && !Near(memory_mib, spec_mib)) continue;
    return spec;
  }
  return nullptr;
}

const MigChain* MigCatalog::ExplicitChain(std::string_view from) const {
  auto it = std::find_if(policy_.chains.begin(), policy_.chains.end(),
                         [&](const MigChain& c) { return c.from == from; });
  return it == policy_.chains.end() ? nullptr : &*it;
}

std::vector<std::string> MigCatalog::Chain(const MigProductSpec& product,
                                           std::string_view profile) const {
  if (const MigChain* chain = ExplicitChain(profile)) return chain->to;
  return DefaultChain(product, profile);
}

}  // namespace gpuadmit
