// The policy: what gpuadmit may change and how. One YAML document (docs/policy.md); parsed
// whole, validated strictly, then shared read-only (std::shared_ptr<const Policy>).
//
//   auto parsed = ParsePolicy(text);
//   if (!parsed.ok()) for (const PolicyIssue& i : parsed.error()) print(i.line, i.column,
//   i.message);
//
// Thread safety: pure functions; a Policy is a value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/admission.h"
#include "core/result.h"

namespace gpuadmit {

enum class ExhaustedAction { kWarn, kDeny };

struct Policy {
  std::string annotation_prefix = "gpuadmit.io";
  FailureMode failure_mode = FailureMode::kOpen;
  std::vector<std::string> exempt_namespaces = {"kube-system"};
  bool mig_fallback = true;
  ExhaustedAction on_exhausted = ExhaustedAction::kWarn;

  // "<prefix>/<name>", the key of an annotation gpuadmit writes.
  std::string Annotation(std::string_view name) const;
  bool IsExempt(std::string_view ns) const;
};

// One problem in a policy file; line and column are 1-based (0 when unknown).
struct PolicyIssue {
  int line = 0;
  int column = 0;
  std::string message;
};

// Parses and validates a policy document. Every unknown key, wrong type and bad value is
// reported, not just the first. An empty document is the default policy.
Result<Policy, std::vector<PolicyIssue>> ParsePolicy(std::string_view yaml_text);

}  // namespace gpuadmit
