// libFuzzer target: the kubeconfig parser (YAML, contexts, clusters, users, inline base64 data).
// File references resolve against a directory that does not exist, so they fail cleanly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "webhook/kube/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = gpuadmit::ParseKubeconfig(text, "/nonexistent-gpuadmit-fuzz/kubeconfig");
  if (!config.ok() && config.error().message.empty()) std::abort();
  return 0;
}
