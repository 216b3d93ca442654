// Kubernetes resource quantities ("1", "2k", "1Gi", "500m", "1e3"), parsed as the apiserver
// does (k8s.io/apimachinery/pkg/api/resource), to milli-units.
//
//   ParseQuantityMilli("500m") -> 500;  ParseWholeQuantity("2") -> 2;
//   ParseWholeQuantity("500m") -> error: extended resources must be whole numbers.
//   ParseMemoryMib("16Gi") -> 16384;  ParseMemoryMib("16GB") -> 15259.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// Parses a quantity into thousandths of a unit, rounding a finer fraction up as the apiserver
// does. Errors on bad syntax or a value beyond int64 milli-units.
Result<int64_t> ParseQuantityMilli(std::string_view text);

// Parses a quantity of an extended resource (nvidia.com/gpu, nvidia.com/mig-*): a whole,
// non-negative number of devices. "500m" and "0.5" are errors, as in the apiserver.
Result<int64_t> ParseWholeQuantity(std::string_view text);

// A GPU memory quantity in MiB, rounded up. A bare number is MiB; a Kubernetes suffix (Ki, Mi,
// Gi, Ti, k, M, G, T) makes it bytes, and a trailing "B" after one ("16GB", "16GiB") is
// accepted. Errors on anything else, and on zero.
Result<int64_t> ParseMemoryMib(std::string_view text);

}  // namespace gpuadmit
