// CommandHelp: each subcommand's own usage, every flag with its default and one line of meaning,
// for `gpuadmit COMMAND --help`.
//
//   if (auto text = CommandHelp("serve")) std::cout << *text;
//
// Thread safety: constant data.
#pragma once

#include <optional>
#include <string_view>

namespace gpuadmit {

// The usage of `command` (serve, review, check-policy, inventory, simulate, report, version), or
// nullopt for a command that does not exist.
std::optional<std::string_view> CommandHelp(std::string_view command);

}  // namespace gpuadmit
