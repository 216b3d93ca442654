// The readers of the policy's sections, one per top-level key (docs/policy.md): each reads its
// YAML node into the section's struct (core/policy/policy.h), reporting every problem to the
// validator. ParsePolicy (core/policy/policy.cc) calls them; not a public API of the core library.
//
//   ReadSharing(root["sharing"], "sharing", validator, policy.sharing);
//
// `path` is the section's dotted name for messages. A reader leaves defaults in place for keys
// that are absent; the struct is only meaningful when the validator recorded no issue.
//
// Thread safety: pure functions over their arguments.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/policy/policy_validator.h"

namespace gpuadmit {

// workloads: custom resources and the JSON pointers to their pod specs (policy_sections.cc).
void ReadWorkloads(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                   std::vector<CustomWorkload>& out);

// mig: fallback switch, what to do when nothing smaller is free, extra products, chains.
void ReadMig(const YAML::Node& node, const std::string& path, PolicyValidator& v, MigPolicy& out);

// requirements: GPU count from parallelism, GPU memory from the model name.
void ReadRequirements(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                      RequirementsPolicy& out);

// workerDefaults: tolerations and /dev/shm for every GPU pod.
void ReadWorkerDefaults(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                        WorkerDefaults& out);

// jobDefaults: ttlSecondsAfterFinished, activeDeadlineSeconds and backoffLimit for GPU Jobs.
void ReadJobDefaults(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                     JobDefaults& out);

// sharing: the modes allowed, the default flow and the rules (policy_sharing.cc).
void ReadSharing(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                 SharingPolicy& out);

// workloadDetection: the switch and the patterns that name an undeclared workload type
// (policy_sharing.cc).
void ReadWorkloadDetection(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                           WorkloadDetectionPolicy& out);

// placement: node choice, affinity and GPU type preferences (policy_placement.cc).
void ReadPlacement(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                   PlacementPolicy& out);

// queue: waiting for GPUs, its timeout and namespaces (policy_queue.cc).
// dra: how DRA claims are written (policy_dra.cc).
void ReadDra(const YAML::Node& node, const std::string& path, PolicyValidator& v, DraPolicy& out);

void ReadQueue(const YAML::Node& node, const std::string& path, PolicyValidator& v,
               QueuePolicy& out);

// A Go duration of whole seconds: "90s", "5m", "1h30m", or a bare number of seconds (300).
// Reports anything else, and values outside [min_seconds, max_seconds].
bool ReadDurationSeconds(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                         int64_t min_seconds, int64_t max_seconds, int64_t& out);

// A list of namespace names (exemptNamespaces, sharing's and the queue's `namespaces`): replaces
// `out`; reports an item that is not an RFC 1123 label (policy.cc).
void ReadNamespaceList(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                       std::vector<std::string>& out);

}  // namespace gpuadmit
