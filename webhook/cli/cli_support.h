// Small pieces the subcommands share: how a usage or configuration error is printed.
//
// Thread safety: called from main's thread only.
#pragma once

#include <string>

namespace gpuadmit {

// Prints "gpuadmit COMMAND: MESSAGE (see gpuadmit --help)" and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);
// Prints "gpuadmit: MESSAGE" and returns kExitConfig.
int ConfigError(const std::string& message);

}  // namespace gpuadmit
