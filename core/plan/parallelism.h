// The parallelism an inference server runs with, and the GPU count it implies:
// world size = tp x pp x max(dp, cp, dcp). Each dimension comes from the server's arguments
// (vLLM --tensor-parallel-size/-tp, SGLang --tp-size/--tp, --tp_size, ...) or from
// an annotation or label (<prefix>/tp-size, tp_size, tensor-parallel-size, tp, tpsize, and the
// same for pp, dp, cp, dcp); the arguments win, since they are what the server reads.
//
//   Parallelism p = ParallelismFromArgs(CommandLineOf(container));
//   p.FillFrom(ParallelismFromInputs(lookup));  // annotation values for dimensions args lack
//   if (p.Explicit()) p.WorldSize();            // 8 for --tp 4 --pp 2
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

enum class ParallelDimension { kTensor, kPipeline, kData, kContext, kDecodeContext };

inline constexpr size_t kParallelDimensions = 5;

// A dimension's largest accepted size. 1024: no inference server splits one model more than
// that many ways along one dimension; a larger value is a typo, not a plan.
inline constexpr int64_t kMaxParallelSize = 1024;

struct ParallelSize {
  int64_t size = 1;
  std::string source;  // "args", or the annotation/label key it was read from
};

struct Parallelism {
  std::array<std::optional<ParallelSize>, kParallelDimensions> sizes;
  std::vector<std::string> problems;  // values that are not sizes, one line each

  // Whether any dimension was given.
  bool Explicit() const;
  // tp x pp x max(dp, cp, dcp), a missing dimension counting as 1.
  int64_t WorldSize() const;
  // Takes each dimension this one lacks from `other` (and its problems).
  void FillFrom(const Parallelism& other);
  // "tp 4 (args) x pp 2 (gpuadmit.io/pp-size)"; the given dimensions only.
  std::string Describe() const;
};

// The short name of a dimension: "tp", "pp", "dp", "cp", "dcp".
std::string_view DimensionName(ParallelDimension d);

// Reads every dimension's flags from a command line (see core/plan/command_line.h), last one wins.
Parallelism ParallelismFromArgs(const std::vector<std::string>& words);

// Reads every dimension from the pod's inputs: `lookup(name)` returns the value of the input
// `name` ("tp-size") and the key it was found under, or nullopt.
using InputLookup =
    std::function<std::optional<std::pair<std::string, std::string>>(std::string_view name)>;
Parallelism ParallelismFromInputs(const InputLookup& lookup);

// Whether `name` ("tp-size", "dpsize") is one of the input names ParallelismFromInputs asks for.
bool IsParallelismInput(std::string_view name);

}  // namespace gpuadmit
