#include "core/json/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <string>

namespace gpuadmit {
namespace {

using nlohmann::json;

json PlainScalar(const std::string& s) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  try {
    if (std::regex_match(s, kInt)) return std::stoll(s);
    if (std::regex_match(s, kFloat)) return std::stod(s);
  } catch (const std::out_of_range&) {
    // Too large for a number: keep the text.
  }
  return s;
}

// Recursion is bounded by yaml-cpp's own parser depth limit.
json Convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return node.Tag() == "?" ? PlainScalar(node.Scalar()) : json(node.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      std::transform(node.begin(), node.end(), std::back_inserter(out),
                     [](const YAML::Node& item) { return Convert(item); });
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) out[entry.first.Scalar()] = Convert(entry.second);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

Result<json> YamlToJson(std::string_view text) {
  try {
    return Convert(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return Error{e.msg};
    return Error{std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " +
                 e.msg};
  }
}

}  // namespace gpuadmit
