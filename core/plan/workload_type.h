// Workload type detection (the policy's workloadDetection): the type a pod that
// declares none most likely is, read from what its GPU containers run. The sharing stage
// (core/plan/sharing.cc) asks for it only when no workload-type label or annotation says it.
//
//   std::vector<std::string> words = CommandLineOf(container);  // core/plan/command_line.h
//   ContainerLaunch launch{"server", "vllm/vllm-openai:v0.5.0", words};
//   DetectedWorkloadType t = DetectWorkloadType({&launch, 1}, policy.workload_detection);
//   t.type  // "inference"
//   t.why   // "detected from image vllm/vllm-openai:v0.5.0"
//
// A pattern names a type and an image, a command, or both; a container matches when all it names
// match (the policy's `workloadDetection.patterns`, docs/policy.md):
//   image    a case-insensitive substring of the image reference ("nvcr.io/nim/", "jupyter")
//   command  words the command line (`command` then `args`, shell-split) holds in this order,
//            anywhere in it. A word matches itself or a path ending in it ("torchrun" matches
//            /usr/local/bin/torchrun); a word ending in `*` matches by prefix ("python*" matches
//            python3.11); `...` stands for any number of words ("mpirun ... python*").
// The policy's patterns are tried first, in file order, then the built-in table: commands before
// images, since what a container runs says more than what it was built from (a Jupyter server
// started in a vLLM image is development). The first pattern that matches any GPU container
// decides; within a pattern, containers in pod spec order. A pattern of type "unknown" stops the
// search with no type: the policy's way to overrule the table.
//
// No regular expressions: matching is a glob over words, linear in the command line for a pattern
// with one `...`, and allocates nothing but the answer.
//
// Thread safety: pure functions over immutable data.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/policy/policy.h"

namespace gpuadmit {

// What detection reads of one container.
struct ContainerLaunch {
  std::string_view name;
  std::string_view image;
  std::span<const std::string> words;  // command then args, as CommandLineOf splits them
};

struct DetectedWorkloadType {
  // "training", "inference", "development" from the table (and "serving", "batch" from the
  // policy); "" when no pattern matched or the one that did says "unknown".
  std::string type;
  // Which pattern matched what; "" when none did. "detected from image vllm/vllm-openai:v0.5.0",
  // "detected from command \"torchrun\" in container trainer (workloadDetection.patterns[0])".
  std::string why;
  bool matched() const { return !why.empty(); }
};

// One row of the built-in table: the same fields as a policy pattern, as constants.
struct BuiltInWorkloadPattern {
  std::string_view type;
  std::string_view image;    // lower case; "" for any
  std::string_view command;  // single-spaced words; "" for any
};

// The built-in table, in the order it is tried.
std::span<const BuiltInWorkloadPattern> BuiltInWorkloadPatterns();

// True when `words` hold the words of `pattern` (single-spaced, as above) in order; false for
// a pattern of more than kMaxCommandPatternWords words (core/policy/policy.h).
bool CommandMatches(std::string_view pattern, std::span<const std::string> words);

// True when the image reference contains `pattern` (lower case), ignoring case.
bool ImageMatches(std::string_view pattern, std::string_view image);

// The type the first matching pattern names (see above). Detection being switched off is the
// caller's to check: this reads only `policy.patterns`.
DetectedWorkloadType DetectWorkloadType(std::span<const ContainerLaunch> containers,
                                        const WorkloadDetectionPolicy& policy);

}  // namespace gpuadmit
