// libFuzzer target: the policy parser. Any text gives a Policy or a list of issues, each with a
// message; never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/policy/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = gpuadmit::ParsePolicy(text);
  if (!parsed.ok()) {
    if (parsed.error().empty()) std::abort();
    for (const gpuadmit::PolicyIssue& issue : parsed.error()) {
      if (issue.message.empty()) std::abort();
    }
  }
  return 0;
}
