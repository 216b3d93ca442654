#include "bench/load/process_cpu.h"

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

namespace gpuadmit::bench {

std::optional<uint64_t> ParseSchedstatRunNs(std::string_view line) {
  uint64_t ns = 0;
  auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), ns);
  if (error != std::errc() || end == line.data()) return std::nullopt;
  return ns;
}

std::optional<uint64_t> ProcessesCpuNs(const std::vector<int>& pids, std::string_view proc_root) {
  namespace fs = std::filesystem;
  uint64_t total = 0;
  for (int pid : pids) {
    std::error_code error;
    fs::directory_iterator tasks(fs::path(proc_root) / std::to_string(pid) / "task", error);
    if (error) return std::nullopt;
    for (const fs::directory_entry& task : tasks) {
      std::ifstream in(task.path() / "schedstat");
      if (!in) continue;  // the thread has ended since the directory was listed
      std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::optional<uint64_t> ns = ParseSchedstatRunNs(line);
      if (!ns) return std::nullopt;
      total += *ns;
    }
  }
  return total;
}

}  // namespace gpuadmit::bench
