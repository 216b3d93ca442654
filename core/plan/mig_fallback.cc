#include "core/plan/mig_fallback.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>
#include <vector>
#include <span>

#include "core/kube/mig_resource.h"
#include "core/kube/quantity.h"
#include "core/plan/mig_catalog.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

// One profile the pod may fall back to, and the GPU products whose nodes count for it.
struct FallbackStep {
  MigProfile profile;
  std::vector<std::string_view> products;
};

struct FallbackChain {
  std::vector<FallbackStep> steps;
  std::string source;  // where the order came from, for the trail
};

// The pod's declared floor, <prefix>/min-gpu-memory: a quantity ("20Gi", "20G") or bare MiB
// ("20480"). 0 when absent.
Result<int64_t> MinMemoryMib(const PodRequest& pod, const Policy& policy) {
  auto text = pod.Input(policy, "min-gpu-memory");
  if (!text) return int64_t{0};
  std::string key = pod.InputName(policy, "min-gpu-memory");
  if (!text->empty() && std::all_of(text->begin(), text->end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    auto mib = ParseWholeQuantity(*text);
    if (!mib.ok()) return Error{key + " \"" + *text + "\": " + mib.error().message};
    return mib.value();
  }
  auto milli = ParseQuantityMilli(*text);
  if (!milli.ok()) return Error{key + " \"" + *text + "\": " + milli.error().message};
  constexpr int64_t kMilliPerMib = int64_t{1000} * 1024 * 1024;
  return milli.value() / kMilliPerMib + (milli.value() % kMilliPerMib > 0 ? 1 : 0);  // round up
}

// The node memory (nvidia.com/gpu.memory) of the first node labelled `product` offering
// `resource`; 0 when unknown.
// The GPU memory of `product`'s nodes: of one offering `resource`, else of any.
int64_t MemoryOf(const InventorySnapshot& snapshot, const std::string& resource,
                 std::string_view product) {
  auto nodes = snapshot.NodesOffering(resource);
  auto it = std::find_if(nodes.begin(), nodes.end(),
                         [&](const NodeInventory* n) { return n->Product() == product; });
  if (it != nodes.end()) return (*it)->facts->gpu.memory_mib;
  for (const NodeInventory& n : snapshot.nodes()) {
    if (n.Product() == product) return n.facts->gpu.memory_mib;
  }
  return 0;
}

// The products whose nodes offer some MIG profile: where a profile no node offers falls back.
std::vector<std::string_view> MigProducts(const InventorySnapshot& snapshot) {
  std::vector<std::string_view> out;
  for (std::string_view resource : snapshot.ResourcesOffered()) {
    if (!resource.starts_with(kMigResourcePrefix)) continue;
    for (std::string_view product : snapshot.ProductsOffering(resource)) {
      if (std::find(out.begin(), out.end(), product) == out.end()) out.push_back(product);
    }
  }
  return out;
}

// For products the catalog does not know: the smaller MIG profiles that nodes labelled
// `product` offer, largest first.
std::vector<std::string> SmallerOffered(const InventorySnapshot& snapshot, const MigProfile& wanted,
                                        std::string_view product) {
  std::vector<MigProfile> smaller;
  for (std::string_view resource : snapshot.ResourcesOffered()) {
    auto p = ParseMigResource(resource);
    if (!p || !p->SmallerThan(wanted)) continue;
    auto nodes = snapshot.NodesOffering(resource);
    if (std::any_of(nodes.begin(), nodes.end(),
                    [&](const NodeInventory* n) { return n->Product() == product; })) {
      smaller.push_back(*p);
    }
  }
  std::sort(smaller.begin(), smaller.end(),
            [](const MigProfile& a, const MigProfile& b) { return b.SmallerThan(a); });
  std::vector<std::string> names;
  std::transform(smaller.begin(), smaller.end(), std::back_inserter(names),
                 [](MigProfile& p) { return std::move(p.name); });
  return names;
}

// The profiles to try instead of `wanted`, in order. Only nodes of the GPU products that offer
// `wanted` count: the policy's explicit chain for it, else per product the catalog's smaller
// profiles (or, for a product the catalog does not know or whose entry lacks `wanted`, the smaller
// profiles its nodes offer), merged largest first.
FallbackChain ChainFor(const InventorySnapshot& snapshot, const MigCatalog& catalog,
                       const std::string& resource, const MigProfile& wanted,
                       std::span<const std::string_view> products) {
  FallbackChain chain;
  if (const MigChain* explicit_chain = catalog.ExplicitChain(wanted.name)) {
    chain.source = "policy chain";
    for (const std::string& to : explicit_chain->to) {
      auto p = ParseMigResource(std::string(kMigResourcePrefix) + to);
      if (p && p->name != wanted.name) {
        chain.steps.push_back({*p, {products.begin(), products.end()}});
      }
    }
    return chain;
  }
  for (std::string_view product : products) {
    const MigProductSpec* spec =
        catalog.ProductFor(product, MemoryOf(snapshot, resource, product));
    std::vector<std::string> names;
    if (spec != nullptr && HasProfile(*spec, wanted.name)) {
      names = DefaultChain(*spec, wanted.name);
      chain.source +=
          (chain.source.empty() ? "" : ", ") + std::string(product) + ": catalog " + spec->product;
    } else {
      names = SmallerOffered(snapshot, wanted, product);
      chain.source +=
          (chain.source.empty() ? "" : ", ") + std::string(product) + ": profiles its nodes offer";
    }
    for (const std::string& name : names) {
      auto p = ParseMigResource(std::string(kMigResourcePrefix) + name);
      if (!p) continue;
      auto step = std::find_if(chain.steps.begin(), chain.steps.end(),
                               [&](const FallbackStep& s) { return s.profile.name == p->name; });
      if (step == chain.steps.end()) {
        chain.steps.push_back({*p, {product}});
      } else {
        step->products.push_back(product);
      }
    }
  }
  std::stable_sort(chain.steps.begin(), chain.steps.end(),
                   [](const FallbackStep& a, const FallbackStep& b) {
                     return b.profile.SmallerThan(a.profile);
                   });
  return chain;
}

std::string Names(const std::vector<FallbackStep>& steps) {
  std::string out;
  for (const FallbackStep& s : steps) out += (out.empty() ? "" : ", ") + s.profile.name;
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::vector<std::string> MigFallbackOrder(const InventorySnapshot& snapshot, const Policy& policy,
                                          std::string_view profile, std::string* source) {
  std::string resource = std::string(kMigResourcePrefix) + std::string(profile);
  auto wanted = ParseMigResource(resource);
  if (!wanted) return {};
  std::span<const std::string_view> products = snapshot.ProductsOffering(resource);
  std::vector<std::string_view> cut;
  if (products.empty()) {
    cut = MigProducts(snapshot);
    products = cut;
  }
  MigCatalog catalog(policy.mig);
  FallbackChain chain = ChainFor(snapshot, catalog, resource, *wanted, products);
  if (source != nullptr) *source = chain.source;
  std::vector<std::string> out;
  for (FallbackStep& step : chain.steps) out.push_back(std::move(step.profile.name));
  return out;
}

void PlanMigFallback(const PodRequest& pod, const PlanContext& context, PlanState& state,
                     Decision& d) {
  const Policy& policy = context.policy;
  if (!policy.mig.fallback || state.opted_out) return;
  if (const auto* opt = pod.InputEntry(policy, "mig-fallback"); opt && opt->second == "false") {
    d.trail.push_back("MIG fallback: off for this pod (" + std::string(opt->first) +
                      ": \"false\")");
    return;
  }
  auto claim = [&](const NodeInventory& node, const std::string& resource, int64_t count) {
    CountOn(d.claims.emplace_back(), node, resource, count, policy);
  };
  MigCatalog catalog(policy.mig);
  std::string fallback_note;

  // Copy the MIG asks: `state.effective()` changes as swaps are made.
  std::vector<std::pair<std::string, int64_t>> asked;
  for (const auto& [resource, count] : state.effective()) {
    if (resource.starts_with(kMigResourcePrefix)) asked.emplace_back(resource, count);
  }
  for (const auto& [resource, count] : asked) {
    auto wanted = ParseMigResource(resource);
    if (!wanted) continue;
    // The sharing stage already chose (and claimed) this profile: nothing to fall back from.
    const std::string& asked_resource = resource;  // clang 14 lambdas cannot capture bindings
    if (std::any_of(d.claims.begin(), d.claims.end(),
                    [&](const Claim& c) { return c.resource == asked_resource; })) {
      continue;
    }
    if (const NodeInventory* node = FindFreeNode(pod, context, resource, count)) {
      d.trail.push_back(Joined({resource, " x", Digits(count), ": free on ", node->name()}));
      claim(*node, resource, count);
      continue;
    }
    std::span<const std::string_view> products = context.snapshot.ProductsOffering(resource);
    // A profile no node is cut into falls back like one that is all taken, along the chains of
    // the products that are cut into MIG devices at all.
    std::vector<std::string_view> cut;
    if (products.empty()) {
      cut = MigProducts(context.snapshot);
      if (cut.empty()) {
        d.warnings.push_back(resource + " is offered by no node, and no node is cut into MIG "
                             "devices; " + pod.name + " left unchanged");
        d.trail.push_back(resource + ": no node offers it, nor any MIG profile");
        continue;
      }
      products = cut;
      d.trail.push_back(resource + ": no node offers it");
    }
    std::string queued;
    if (int64_t n = Get(context.snapshot.queued(), resource) -
                    Get(context.snapshot.unplaceable(), resource);
        n > 0) {
      queued = " (" + std::to_string(n) + " counted for pods queued for the scheduler)";
    }
    d.trail.push_back(resource + " x" + std::to_string(count) +
                      ": free on no node this pod may use" + queued);
    auto floor = MinMemoryMib(pod, policy);
    if (!floor.ok()) {
      // A floor that cannot be read cannot be kept: falling back might break it.
      d.warnings.push_back("gpuadmit: " + floor.error().message + "; " + pod.name +
                           " left unchanged");
      d.trail.push_back("  min-gpu-memory unreadable: no fallback");
      continue;
    }
    FallbackChain chain = ChainFor(context.snapshot, catalog, resource, *wanted, products);
    d.trail.push_back("  chain " + Names(chain.steps) + " (" + chain.source + ")");
    bool placed = false;
    for (const FallbackStep& step : chain.steps) {
      std::string to = MigResourceName(step.profile);
      if (int64_t mib = MigProfileMemoryMib(step.profile.name); mib < floor.value()) {
        d.trail.push_back("  " + to + ": " + std::to_string(mib) + " MiB, below min-gpu-memory " +
                          std::to_string(floor.value()) + " MiB");
        continue;
      }
      PlanState swapped = state;
      swapped.Swap(resource, to, pod.needs.overhead);
      int64_t need = Get(swapped.effective(), to);
      const NodeInventory* node = FindFreeNode(pod, context, to, need, step.products);
      if (node == nullptr) {
        d.trail.push_back("  " + to + " x" + std::to_string(need) + ": not free either");
        continue;
      }
      d.trail.push_back("  " + to + " x" + std::to_string(need) + ": free on " + node->name() +
                        ", falling back");
      d.swaps.push_back({resource, to});
      claim(*node, to, need);
      d.tally.Mark(DecisionPoint::kMigFallback);
      d.tally.fallbacks.push_back({wanted->name, step.profile.name});
      if (!fallback_note.empty()) fallback_note += ",";
      fallback_note += wanted->name + "->" + step.profile.name;
      state = std::move(swapped);
      placed = true;
      break;
    }
    if (!placed) {
      d.tally.Mark(DecisionPoint::kMigExhausted);
      std::string why = resource + " is free on no node " + pod.name +
                        " may use, and no smaller MIG profile is either";
      if (floor.value() > 0) {
        why = resource + " is free on no node " + pod.name +
              " may use, and no smaller MIG profile with at least " +
              std::to_string(floor.value()) + " MiB (min-gpu-memory) is either";
      }
      if (policy.mig.on_exhausted == ExhaustedAction::kDeny) {
        d.deny = why;
        return;
      }
      d.warnings.push_back(why + "; left unchanged");
    }
  }
  if (!fallback_note.empty()) {
    d.annotations.emplace_back(policy.Annotation("fallback"), fallback_note);
    d.warnings.push_back("gpuadmit: " + pod.name + " falls back " + fallback_note +
                         " (requested MIG profile free on no node)");
  }
}

}  // namespace gpuadmit
