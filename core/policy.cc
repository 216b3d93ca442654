#include "core/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

namespace gpuadmit {
namespace {

class Validator {
 public:
  std::vector<PolicyIssue> issues;

  void Report(const YAML::Node& at, std::string message) {
    YAML::Mark mark = at.Mark();
    bool known = !mark.is_null();
    issues.push_back({known ? mark.line + 1 : 0, known ? mark.column + 1 : 0, std::move(message)});
  }

  void OnlyKeys(const YAML::Node& map, std::string_view where,
                std::initializer_list<std::string_view> allowed) {
    for (const auto& entry : map) {
      std::string key = entry.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        Report(entry.first, "unknown key \"" + key + "\" in " + std::string(where));
      }
    }
  }

  bool String(const YAML::Node& node, std::string_view key, std::string& out) {
    if (!node.IsScalar()) {
      Report(node, std::string(key) + " must be a string");
      return false;
    }
    out = node.Scalar();
    return true;
  }

  bool Bool(const YAML::Node& node, std::string_view key, bool& out) {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (s == "true" || s == "false") {
        out = s == "true";
        return true;
      }
    }
    Report(node, std::string(key) + " must be true or false");
    return false;
  }

  template <typename E>
  void Enum(const YAML::Node& node, std::string_view key,
            std::initializer_list<std::pair<std::string_view, E>> choices, E& out) {
    std::string s;
    if (!String(node, key, s)) return;
    std::string names;
    for (const auto& [name, value] : choices) {
      if (name == s) {
        out = value;
        return;
      }
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    Report(node, std::string(key) + " must be one of " + names + ", not \"" + s + "\"");
  }
};

// The prefix becomes the domain part of annotation keys, so it must be a DNS subdomain.
bool IsDnsSubdomain(const std::string& s) {
  static const std::regex kSubdomain(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, kSubdomain);
}

void ReadMigFallback(const YAML::Node& node, Validator& v, Policy& p) {
  if (!node.IsMap()) {
    v.Report(node, "migFallback must be a map");
    return;
  }
  v.OnlyKeys(node, "migFallback", {"enabled", "onExhausted"});
  if (node["enabled"]) v.Bool(node["enabled"], "migFallback.enabled", p.mig.fallback);
  if (node["onExhausted"]) {
    v.Enum<ExhaustedAction>(node["onExhausted"], "migFallback.onExhausted",
                            {{"warn", ExhaustedAction::kWarn}, {"deny", ExhaustedAction::kDeny}},
                            p.mig.on_exhausted);
  }
}

void ReadPolicy(const YAML::Node& root, Validator& v, Policy& p) {
  v.OnlyKeys(root, "the policy",
             {"annotationPrefix", "failureMode", "exemptNamespaces", "migFallback"});
  if (const YAML::Node n = root["annotationPrefix"]) {
    std::string prefix;
    if (v.String(n, "annotationPrefix", prefix)) {
      if (IsDnsSubdomain(prefix))
        p.annotation_prefix = prefix;
      else
        v.Report(n, "annotationPrefix \"" + prefix + "\" is not a DNS subdomain");
    }
  }
  if (const YAML::Node n = root["failureMode"]) {
    v.Enum<FailureMode>(n, "failureMode",
                        {{"open", FailureMode::kOpen}, {"closed", FailureMode::kClosed}},
                        p.failure_mode);
  }
  if (const YAML::Node n = root["exemptNamespaces"]) {
    if (!n.IsSequence()) {
      v.Report(n, "exemptNamespaces must be a list of namespace names");
    } else {
      p.exempt_namespaces.clear();
      for (const YAML::Node& ns : n) {
        std::string name;
        if (v.String(ns, "exemptNamespaces[]", name)) p.exempt_namespaces.push_back(name);
      }
    }
  }
  if (const YAML::Node n = root["migFallback"]) ReadMigFallback(n, v, p);
}

}  // namespace

std::string Policy::Annotation(std::string_view name) const {
  return annotation_prefix + "/" + std::string(name);
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

Result<Policy, std::vector<PolicyIssue>> ParsePolicy(std::string_view yaml_text) {
  Validator v;
  Policy p;
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) return p;
    if (!root.IsMap()) {
      v.Report(root, "the policy must be a YAML map");
    } else {
      ReadPolicy(root, v, p);
    }
  } catch (const YAML::Exception& e) {
    bool known = !e.mark.is_null();
    v.issues.push_back({known ? e.mark.line + 1 : 0, known ? e.mark.column + 1 : 0, e.msg});
  }
  if (!v.issues.empty()) return v.issues;
  return p;
}

}  // namespace gpuadmit
