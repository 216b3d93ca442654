// A node of the scheduler model (core/sim/scheduler_model.h) for tests: ready, not cordoned,
// labelled kubernetes.io/hostname with its name, no taints, the allocatable the test states.
//
//   SimNode n = testing::ReadySimNode("a", {4000, 8LL << 30, 110, {{"nvidia.com/gpu", 8}}});
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/sim/scheduler_model.h"

namespace gpuadmit::testing {

inline SimNode ReadySimNode(const std::string& name, SimResources allocatable) {
  auto facts = std::make_shared<NodeFacts>();
  facts->name = name;
  facts->ready = true;
  facts->labels = {{"kubernetes.io/hostname", name}};
  SimNode n;
  n.facts = facts;
  n.allocatable = std::move(allocatable);
  return n;
}

}  // namespace gpuadmit::testing
