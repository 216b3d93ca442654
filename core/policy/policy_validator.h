// PolicyValidator: reads a YAML tree into typed policy values and collects every problem found,
// each at its line and column, so one pass over a policy file reports all of them. Used by
// ParsePolicy (core/policy/policy.cc) and the section readers (core/policy/policy_sections.h); not
// a public API of the core library.
//
//   PolicyValidator v;
//   v.Map(root, "", {{"failMode", [&](const YAML::Node& n, const std::string& path) {
//                       v.Enum<FailureMode>(n, path, {{"open", FailureMode::kOpen},
//                                                     {"closed", FailureMode::kClosed}}, mode);
//                     }}});
//   if (!v.issues().empty()) ...   // e.g. {2, 11, "failMode must be one of open, closed, ..."}
//
// A value is written to `out` only when it is valid; otherwise `out` keeps its default and an
// issue is recorded. Messages name the value by its dotted path ("sharing.rules[0].mode").
//
// Thread safety: one validator per parse; not shared between threads.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/policy/policy.h"

namespace gpuadmit {

// "path.key", or "key" at the top of the document (path "").
std::string ChildPath(const std::string& path, std::string_view key);

// Kubernetes name syntax (k8s.io/apimachinery/pkg/util/validation).
bool IsDnsSubdomain(std::string_view s);  // RFC 1123 subdomain: "gpuadmit.io", "ome.io"
bool IsDnsLabel(std::string_view s);      // RFC 1123 label: a namespace name
bool IsLabelKey(std::string_view s);      // [prefix/]name: "team", "nvidia.com/gpu"
bool IsLabelValue(std::string_view s);    // "" or a name of up to 63 characters
// An RFC 6901 pointer into an object, not the whole object: "/spec/engine", not "".
bool IsPointerIntoObject(std::string_view s);

class PolicyValidator {
 public:
  // Reads one value; `path` is its dotted name for messages.
  using Reader = std::function<void(const YAML::Node& value, const std::string& path)>;
  // Reads one entry of a map whose keys are data (pod labels, MIG profiles).
  using EntryReader =
      std::function<void(const YAML::Node& key, const YAML::Node& value, const std::string& path)>;

  struct Field {
    std::string_view key;
    Reader read;
    bool required = false;
  };

  // Records a problem at `at`'s position (0:0 when yaml-cpp knows none).
  void Report(const YAML::Node& at, std::string message);

  // Reads a map with a fixed set of keys: reports a `node` that is not a map, unknown and
  // repeated keys, and missing required ones, then calls each present key's reader in file
  // order. A key whose value is empty (`key:` or `key: null`) counts as absent. Returns false
  // when `node` is not a map.
  bool Map(const YAML::Node& node, const std::string& path, std::initializer_list<Field> fields);

  // Reads a map whose keys are data: reports a `node` that is not a map, non-string and
  // repeated keys, and calls `read` for every other entry ("path.key" as its path).
  bool Entries(const YAML::Node& node, const std::string& path, const EntryReader& read);

  // Reads a list: reports a `node` that is not one, and calls `read` for each item with the path
  // "path[i]".
  bool List(const YAML::Node& node, const std::string& path, const Reader& read);

  // Scalars. Each reports a value of the wrong type or out of range and returns false.
  bool String(const YAML::Node& node, const std::string& path, std::string& out);
  bool NonEmptyString(const YAML::Node& node, const std::string& path, std::string& out);
  bool Bool(const YAML::Node& node, const std::string& path, bool& out);
  bool Int(const YAML::Node& node, const std::string& path, int64_t min, int64_t max, int64_t& out);
  bool Int(const YAML::Node& node, const std::string& path, int min, int max, int& out);
  bool Number(const YAML::Node& node, const std::string& path, double min, double max, double& out);
  // A GPU memory size: a Kubernetes quantity of bytes ("20Gi", "20000Mi", "20G") or a bare whole
  // number of MiB (20000), as whole MiB, rounded up.
  bool MemoryMib(const YAML::Node& node, const std::string& path, int64_t& out);
  // The same four into an optional setting, set only when the value is valid.
  bool Int(const YAML::Node& node, const std::string& path, int64_t min, int64_t max,
           std::optional<int64_t>& out);
  bool Int(const YAML::Node& node, const std::string& path, int min, int max,
           std::optional<int>& out);
  bool Number(const YAML::Node& node, const std::string& path, double min, double max,
              std::optional<double>& out);
  bool MemoryMib(const YAML::Node& node, const std::string& path, std::optional<int64_t>& out);
  // A list of strings; `out` is replaced only when every item is a string.
  bool StringList(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
  // A MIG profile name as the device plugin spells it after "nvidia.com/mig-": "2g.20gb".
  bool MigProfileName(const YAML::Node& node, const std::string& path, std::string& out);

  // One of `choices`, by name; the message lists them all.
  template <typename E>
  bool Enum(const YAML::Node& node, const std::string& path,
            std::initializer_list<std::pair<std::string_view, E>> choices, E& out) {
    std::string s;
    if (!String(node, path, s)) return false;
    std::string names;
    for (const auto& [name, value] : choices) {
      if (name == s) {
        out = value;
        return true;
      }
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    Report(node, path + " must be one of " + names + ", not \"" + s + "\"");
    return false;
  }

  const std::vector<PolicyIssue>& issues() const { return issues_; }

 private:
  std::vector<PolicyIssue> issues_;
};

}  // namespace gpuadmit
