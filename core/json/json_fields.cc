#include "core/json/json_fields.h"

namespace gpuadmit {

const nlohmann::json& At(const nlohmann::json& from, std::initializer_list<std::string_view> path) {
  // A constant, not state: the null every absent field reads as.
  static const nlohmann::json kNull;
  const nlohmann::json* at = &from;
  for (std::string_view key : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

std::string StringAt(const nlohmann::json& from, std::initializer_list<std::string_view> path) {
  const nlohmann::json& value = At(from, path);
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace gpuadmit
