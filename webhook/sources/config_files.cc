#include "webhook/sources/config_files.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "core/json/yaml_json.h"
#include "webhook/os/read_file.h"

namespace gpuadmit {

Result<Policy> LoadPolicyFile(const std::string& path, std::string* text_read) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  auto policy = ParsePolicy(text.value());
  if (policy.ok()) {
    if (text_read != nullptr) *text_read = std::move(text).value();
    return policy.value();
  }
  std::string message;
  for (const PolicyIssue& issue : policy.error()) {
    if (!message.empty()) message += '\n';
    message += path + ":" + std::to_string(issue.line) + ":" + std::to_string(issue.column) + ": " +
               issue.message;
  }
  return Error{message};
}

Result<nlohmann::json> LoadClusterList(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  const std::string& t = text.value();
  size_t first = t.find_first_not_of(" \t\r\n");
  nlohmann::json list;
  if (first != std::string::npos && t[first] == '{') {
    list = nlohmann::json::parse(t, nullptr, /*allow_exceptions=*/false);
    if (list.is_discarded()) return Error{path + ": not valid JSON"};
  } else {
    auto converted = YamlToJson(t);
    if (!converted.ok()) return Error{path + ":" + converted.error().message};
    list = std::move(converted).value();
  }
  return list;
}

Result<InventorySnapshot> ClusterSnapshotOf(const Result<nlohmann::json>& list,
                                            const std::string& path, const Policy& policy) {
  if (!list.ok()) return list.error();
  auto snapshot = InventorySnapshot::FromObjects(list.value(), policy.Annotation("reservation"));
  if (!snapshot.ok()) return Error{path + ": " + snapshot.error().message};
  return std::move(snapshot).value();
}

Result<InventorySnapshot> LoadClusterFile(const std::string& path, const Policy& policy) {
  return ClusterSnapshotOf(LoadClusterList(path), path, policy);
}

}  // namespace gpuadmit
