#include "webhook/os/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuadmit {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": " + std::strerror(errno)};
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Error{path + ": read failed: " + std::strerror(errno)};
  return out.str();
}

}  // namespace gpuadmit
