#include "bench/load/host_steal.h"

#include <charconv>
#include <fstream>
#include <string>

namespace gpuadmit::bench {

std::optional<CpuTicks> ParseCpuTicks(std::string_view stat) {
  constexpr std::string_view kCpu = "cpu ";
  if (!stat.starts_with(kCpu)) return std::nullopt;
  std::string_view line = stat.substr(kCpu.size(), stat.find('\n') - kCpu.size());
  CpuTicks ticks;
  int fields = 0;
  while (true) {
    size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    uint64_t value = 0;
    auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), value);
    if (error != std::errc() || (end != line.data() + line.size() && *end != ' ')) {
      return std::nullopt;
    }
    line.remove_prefix(static_cast<size_t>(end - line.data()));
    // Fields 9 and 10 (guest, guest_nice) are already counted in user and nice.
    if (fields < 8) ticks.total += value;
    if (fields == 7) ticks.steal = value;
    ++fields;
  }
  if (fields < 8) return std::nullopt;
  return ticks;
}

std::optional<CpuTicks> ReadCpuTicks(const char* path) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return std::nullopt;
  return ParseCpuTicks(first);
}

std::optional<double> StealPercent(const CpuTicks& before, const CpuTicks& after) {
  if (after.total <= before.total || after.steal < before.steal) return std::nullopt;
  return 100.0 * static_cast<double>(after.steal - before.steal) /
         static_cast<double>(after.total - before.total);
}

}  // namespace gpuadmit::bench
