// Reads a whole file into memory; the one place webhook/ reads configuration files.
//
// Thread safety: safe from any thread.
#pragma once

#include <string>

#include "core/result.h"

namespace gpuadmit {

// The file's bytes, or an error naming the path and the OS reason.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace gpuadmit
