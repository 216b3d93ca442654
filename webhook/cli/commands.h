// The gpuadmit subcommands. Each takes its argv (after the subcommand name) and returns the
// process exit code; see kUsage in main.cc and the README for the codes.
//
// Thread safety: called once, from main.
#pragma once

namespace gpuadmit {

// Exit codes, documented in README.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;  // check-policy found problems; review input was refused
inline constexpr int kExitUsage = 2;     // bad command line
inline constexpr int kExitConfig = 3;    // a file could not be loaded, a port bound, TLS set up

int ServeCommand(int argc, char** argv);
int ReviewCommand(int argc, char** argv);
int CheckPolicyCommand(int argc, char** argv);
int InventoryCommand(int argc, char** argv);
int SimulateCommand(int argc, char** argv);
int ReportCommand(int argc, char** argv);

}  // namespace gpuadmit
