#include "bench/scale/process_probe.h"

#include <dirent.h>
#include <malloc.h>
#ifdef GPUADMIT_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace gpuadmit::bench {

double CpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

Memory ReadMemory() {
  Memory m;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    double kib = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lf kB", &kib) == 1) m.rss_mib = kib / 1024;
    if (std::sscanf(line.c_str(), "VmHWM: %lf kB", &kib) == 1) m.hwm_mib = kib / 1024;
  }
  return m;
}

double HeapInUseMib() {
#ifdef GPUADMIT_WITH_JEMALLOC
  // jemalloc's own count: glibc's mallinfo2 sees nothing once jemalloc serves malloc.
  uint64_t epoch = 1;
  size_t size = sizeof epoch;
  mallctl("epoch", &epoch, &size, &epoch, size);  // refresh the statistics
  size_t allocated = 0;
  size = sizeof allocated;
  if (mallctl("stats.allocated", &allocated, &size, nullptr, 0) != 0) return 0;
  return static_cast<double>(allocated) / (1 << 20);
#else
  return static_cast<double>(mallinfo2().uordblks) / (1 << 20);
#endif
}

std::vector<std::pair<int, double>> ThreadCpu() {
  std::vector<std::pair<int, double>> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream stat(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // Fields after the parenthesised name, which may hold spaces: state is field 3, utime 14,
    // stime 15 (proc(5)).
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) ticks += std::stod(field);
    }
    out.emplace_back(std::atoi(entry->d_name), ticks / tick);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::string MachineSummary() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  loadavg >> load;
  return std::to_string(std::thread::hardware_concurrency()) + " cores, " + model +
         ", load average " + load;
}

std::string CommandOutput(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

Link::Link(int in, int out) : in_(fdopen(in, "r")), out_(fdopen(out, "w")) {}

Link::~Link() {
  std::fclose(in_);
  std::fclose(out_);
}

void Link::Send(const std::string& line) {
  std::fputs((line + "\n").c_str(), out_);
  std::fflush(out_);
}

std::string Link::Receive() {
  char buf[4096];
  if (std::fgets(buf, sizeof buf, in_) == nullptr) return "";
  std::string line = buf;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

}  // namespace gpuadmit::bench
