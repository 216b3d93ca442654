// The names of a Kubernetes API type: its group, version and kind (what an object is), or group,
// version and resource (where it is served). Admission requests carry both; the workload table
// and the policy's custom resources match on group and kind.
//
// Thread safety: values.
#pragma once

#include <string>

namespace gpuadmit {

struct GroupVersionKind {
  std::string group;
  std::string version;
  std::string kind;
};

struct GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;
};

}  // namespace gpuadmit
