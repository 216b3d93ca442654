// The policy's top level: the document, its small knobs (annotation prefix, failure mode,
// exempt namespaces) and the dispatch to the section readers (core/policy/policy_sections.h).
#include "core/policy/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <tuple>

#include "core/policy/policy_sections.h"
#include "core/policy/policy_validator.h"
#include "core/text/append.h"

namespace gpuadmit {
namespace {

void ReadPolicy(const YAML::Node& root, PolicyValidator& v, Policy& p) {
  using Node = YAML::Node;
  using Path = std::string;
  v.Map(root, "",
        {{"annotationPrefix",
          [&](const Node& n, const Path& path) {
            // The prefix becomes the domain part of annotation keys: a DNS subdomain.
            std::string prefix;
            if (!v.String(n, path, prefix)) return;
            if (!IsDnsSubdomain(prefix)) {
              v.Report(n, path + " \"" + prefix + "\" is not a DNS subdomain");
              return;
            }
            p.annotation_prefix = prefix;
          }},
         {"failureMode",
          [&](const Node& n, const Path& path) {
            v.Enum<FailureMode>(n, path,
                                {{"open", FailureMode::kOpen}, {"closed", FailureMode::kClosed}},
                                p.failure_mode);
          }},
         {"exemptNamespaces",
          [&](const Node& n, const Path& path) {
            ReadNamespaceList(v, n, path, p.exempt_namespaces);
          }},
         {"workloads",
          [&](const Node& n, const Path& path) { ReadWorkloads(n, path, v, p.workloads); }},
         {"mig", [&](const Node& n, const Path& path) { ReadMig(n, path, v, p.mig); }},
         {"sharing", [&](const Node& n, const Path& path) { ReadSharing(n, path, v, p.sharing); }},
         {"workloadDetection",
          [&](const Node& n, const Path& path) {
            ReadWorkloadDetection(n, path, v, p.workload_detection);
          }},
         {"requirements",
          [&](const Node& n, const Path& path) { ReadRequirements(n, path, v, p.requirements); }},
         {"placement",
          [&](const Node& n, const Path& path) { ReadPlacement(n, path, v, p.placement); }},
         {"workerDefaults",
          [&](const Node& n, const Path& path) {
            ReadWorkerDefaults(n, path, v, p.worker_defaults);
          }},
         {"jobDefaults",
          [&](const Node& n, const Path& path) { ReadJobDefaults(n, path, v, p.job_defaults); }},
         {"queue", [&](const Node& n, const Path& path) { ReadQueue(n, path, v, p.queue); }},
         {"dra", [&](const Node& n, const Path& path) { ReadDra(n, path, v, p.dra); }},
         // Before the mig section existed; a clear message beats "unknown key".
         {"migFallback", [&](const Node& n, const Path& path) {
            v.Report(n, path + " is now mig.fallback and mig.onExhausted (see docs/policy.md)");
          }}});
}

}  // namespace

std::string Policy::Annotation(std::string_view name) const {
  return Joined({annotation_prefix, "/", name});  // served reviews ask for one or two a review
}

std::vector<std::string> Policy::InputKeys(std::string_view name) const {
  std::vector<std::string> keys = {Annotation(name)};
  std::string alias = "gpu-autoscaler.io/" + std::string(name);
  if (alias != keys.front()) keys.push_back(std::move(alias));
  return keys;
}

bool Policy::IsExempt(std::string_view ns) const {
  return std::find(exempt_namespaces.begin(), exempt_namespaces.end(), ns) !=
         exempt_namespaces.end();
}

void ReadNamespaceList(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                       std::vector<std::string>& out) {
  out.clear();
  v.List(node, path, [&](const YAML::Node& item, const std::string& at) {
    std::string ns;
    if (!v.String(item, at, ns)) return;
    if (!IsDnsLabel(ns)) {
      v.Report(item, at + " must be a namespace name, not \"" + ns + "\"");
      return;
    }
    out.push_back(std::move(ns));
  });
}

Result<Policy, std::vector<PolicyIssue>> ParsePolicy(std::string_view yaml_text) {
  PolicyValidator v;
  Policy p;
  std::vector<PolicyIssue> issues;
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) return p;
    if (!root.IsMap()) {
      v.Report(root, "the policy must be a YAML map");
    } else {
      ReadPolicy(root, v, p);
    }
    issues = v.issues();
  } catch (const YAML::Exception& e) {
    // A syntax error ends the parse: yaml-cpp stops at the first one.
    bool known = !e.mark.is_null();
    issues.push_back({known ? e.mark.line + 1 : 0, known ? e.mark.column + 1 : 0, e.msg});
  }
  if (issues.empty()) return p;
  // In file order, as an editor lists them; issues without a position last.
  std::stable_sort(issues.begin(), issues.end(), [](const PolicyIssue& a, const PolicyIssue& b) {
    auto key = [](const PolicyIssue& i) { return std::make_tuple(i.line == 0, i.line, i.column); };
    return key(a) < key(b);
  });
  return issues;
}

}  // namespace gpuadmit
