#include "core/dra/device_choice.h"

#include <tuple>
#include <vector>

#include "core/kube/gpu_equivalents.h"

namespace gpuadmit {
namespace {

// GPU equivalents that could still be carved from `gpu`'s devices out of `left`: each resource
// counted as if it alone were carved, one device after another.
double Carvable(const std::vector<const DraDevice*>& gpu, std::string_view driver,
                const CounterAmounts& left) {
  std::map<std::string, CounterAmounts> by_resource;
  double total = 0;
  for (const DraDevice* d : gpu) {
    std::string resource = DeviceResource(driver, *d);
    if (resource.empty()) continue;
    auto [it, added] = by_resource.try_emplace(resource, left);
    if (Consume(*d, it->second)) total += GpuEquivalents(resource, 1, 1);
  }
  return total;
}

// What is left in the counter sets `gpu`'s devices draw on, summed: less is fuller.
int64_t LeftOn(const std::vector<const DraDevice*>& gpu, const CounterAmounts& left) {
  std::map<std::string, bool> sets;
  for (const DraDevice* d : gpu) {
    for (const auto& [set, counters] : d->consumes) sets[set] = true;
  }
  int64_t sum = 0;
  for (const auto& [set, used] : sets) {
    auto it = left.find(set);
    if (it == left.end()) continue;
    for (const auto& [counter, amount] : it->second) sum += amount;
  }
  return sum;
}

// One GPU's view: its free devices in the pool's order, and the first `facts` selects that fits.
struct GpuView {
  std::vector<const DraDevice*> devices;
  const DraDevice* first_fit = nullptr;
};

// What taking `device` from `left` loses on its GPU.
double Lost(const GpuView& gpu, std::string_view driver, const CounterAmounts& left,
            const DraDevice& device) {
  CounterAmounts after = left;
  Consume(device, after);
  return Carvable(gpu.devices, driver, left) - Carvable(gpu.devices, driver, after);
}

}  // namespace

std::optional<GpuChoice> ChooseGpu(const std::map<std::string, NodeDevices, std::less<>>& devices,
                                   const SelectorFacts& facts, std::string_view node) {
  std::optional<GpuChoice> best;
  std::tuple<double, int64_t> best_rank;
  size_t gpus = 0;
  bool any_counters = false;
  for (const auto& [name, pools] : devices) {
    if (!node.empty() && name != node) continue;
    const DraDevice* node_first_fit = nullptr;
    double node_first_fit_lost = 0;
    for (const PoolDevices& pool : pools) {
      std::map<std::string, GpuView> by_gpu;
      std::vector<std::string> order;  // GPUs in the order their first device comes
      for (const DraDevice& d : pool.idle) {
        const std::string& gpu = GpuOf(d);
        if (gpu.empty()) continue;
        auto [it, added] = by_gpu.try_emplace(gpu);
        if (added) order.push_back(gpu);
        it->second.devices.push_back(&d);
        if (it->second.first_fit != nullptr || !Selects(facts, pool.driver, d)) continue;
        CounterAmounts left = pool.left;
        if (Consume(d, left)) it->second.first_fit = &d;
      }
      for (const std::string& gpu : order) {
        const GpuView& view = by_gpu.at(gpu);
        if (view.first_fit == nullptr) continue;
        ++gpus;
        any_counters = any_counters || !view.first_fit->consumes.empty();
        double lost = Lost(view, pool.driver, pool.left, *view.first_fit);
        if (node_first_fit == nullptr) {
          node_first_fit = view.first_fit;
          node_first_fit_lost = lost;
        }
        std::tuple<double, int64_t> rank{lost, LeftOn(view.devices, pool.left)};
        if (best && !(rank < best_rank)) continue;
        best_rank = rank;
        best = GpuChoice{name, pool.driver + "/" + pool.pool, gpu, "", view.first_fit->name, lost};
        for (const DraDevice* d : view.devices) {
          if (d->type == "gpu" && d->uuid == gpu) best->gpu_device = d->name;
        }
        best->first_fit_device = node_first_fit->name;
        best->first_fit_lost = node_first_fit_lost;
      }
    }
  }
  if (!best || !any_counters) return std::nullopt;
  best->gpus = gpus;
  return best;
}

}  // namespace gpuadmit
