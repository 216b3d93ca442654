#include "core/policy/policy_validator.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <regex>
#include <sstream>

#include "core/json/json_view.h"
#include "core/kube/mig_resource.h"
#include "core/kube/quantity.h"

namespace gpuadmit {
namespace {

// What a value is, for "must be X, not <what>" messages.
std::string Shown(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return (node.Tag() == "!" ? "the quoted string \"" : "\"") + node.Scalar() + "\"";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "empty";
  }
}

// A plain (unquoted) scalar: numbers and booleans must be written bare, as YAML types them.
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

std::string NumberText(double d) {
  std::ostringstream out;
  out << d;
  return out.str();
}

// Edit distance, to suggest the key a misspelt one was meant to be. Keys are short; the
// quadratic table is a few hundred cells.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean \"x\"?)" for the nearest known key within two edits, else "".
std::string Suggestion(std::string_view key, std::initializer_list<PolicyValidator::Field> fields) {
  const PolicyValidator::Field* best = nullptr;
  size_t best_distance = 3;  // more than two edits apart is another word, not a typo
  for (const PolicyValidator::Field& f : fields) {
    size_t d = Distance(key, f.key);
    if (d < best_distance) {
      best_distance = d;
      best = &f;
    }
  }
  return best == nullptr ? "" : " (did you mean \"" + std::string(best->key) + "\"?)";
}

}  // namespace

bool IsDnsSubdomain(std::string_view s) {
  static const std::regex kSubdomain(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  return !s.empty() && s.size() <= 253 && std::regex_match(s.begin(), s.end(), kSubdomain);
}

bool IsDnsLabel(std::string_view s) {
  static const std::regex kLabel(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?)");
  return !s.empty() && s.size() <= 63 && std::regex_match(s.begin(), s.end(), kLabel);
}

bool IsLabelValue(std::string_view s) {
  static const std::regex kValue(R"(([A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?)?)");
  return s.size() <= 63 && std::regex_match(s.begin(), s.end(), kValue);
}

bool IsLabelKey(std::string_view s) {
  size_t slash = s.find('/');
  std::string_view name = slash == std::string_view::npos ? s : s.substr(slash + 1);
  if (slash != std::string_view::npos && !IsDnsSubdomain(s.substr(0, slash))) return false;
  return !name.empty() && IsLabelValue(name);
}

bool IsPointerIntoObject(std::string_view s) { return !s.empty() && IsJsonPointer(s); }

std::string ChildPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void PolicyValidator::Report(const YAML::Node& at, std::string message) {
  YAML::Mark mark = at.Mark();
  bool known = !mark.is_null();
  issues_.push_back({known ? mark.line + 1 : 0, known ? mark.column + 1 : 0, std::move(message)});
}

bool PolicyValidator::Map(const YAML::Node& node, const std::string& path,
                          std::initializer_list<Field> fields) {
  const std::string where = path.empty() ? "the policy" : path;
  if (!node.IsMap()) {
    Report(node, where + " must be a map, not " + Shown(node));
    return false;
  }
  std::vector<bool> seen(fields.size(), false);
  std::vector<bool> present(fields.size(), false);
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      Report(entry.first, "a key in " + where + " must be a plain name, not " + Shown(entry.first));
      continue;
    }
    const std::string& key = entry.first.Scalar();
    const auto* field =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
    if (field == fields.end()) {
      Report(entry.first, "unknown key \"" + key + "\" in " + where + Suggestion(key, fields));
      continue;
    }
    auto index = static_cast<size_t>(field - fields.begin());
    if (seen[index]) {
      Report(entry.first, "key \"" + key + "\" appears twice in " + where);
      continue;
    }
    seen[index] = true;
    if (entry.second.IsNull()) continue;
    present[index] = true;
    field->read(entry.second, ChildPath(path, key));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = *(fields.begin() + i);
    if (f.required && !present[i]) Report(node, ChildPath(path, f.key) + " is required");
  }
  return true;
}

bool PolicyValidator::Entries(const YAML::Node& node, const std::string& path,
                              const EntryReader& read) {
  if (!node.IsMap()) {
    Report(node, path + " must be a map, not " + Shown(node));
    return false;
  }
  std::vector<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      Report(entry.first, "a key in " + path + " must be a string, not " + Shown(entry.first));
      continue;
    }
    const std::string& key = entry.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      Report(entry.first, "key \"" + key + "\" appears twice in " + path);
      continue;
    }
    seen.push_back(key);
    read(entry.first, entry.second, ChildPath(path, key));
  }
  return true;
}

bool PolicyValidator::List(const YAML::Node& node, const std::string& path, const Reader& read) {
  if (!node.IsSequence()) {
    Report(node, path + " must be a list, not " + Shown(node));
    return false;
  }
  for (size_t i = 0; i < node.size(); ++i) read(node[i], path + "[" + std::to_string(i) + "]");
  return true;
}

bool PolicyValidator::String(const YAML::Node& node, const std::string& path, std::string& out) {
  if (!node.IsScalar()) {
    Report(node, path + " must be a string, not " + Shown(node));
    return false;
  }
  out = node.Scalar();
  return true;
}

bool PolicyValidator::NonEmptyString(const YAML::Node& node, const std::string& path,
                                     std::string& out) {
  std::string s;
  if (!String(node, path, s)) return false;
  if (s.empty()) {
    Report(node, path + " must not be empty");
    return false;
  }
  out = std::move(s);
  return true;
}

bool PolicyValidator::Bool(const YAML::Node& node, const std::string& path, bool& out) {
  if (IsPlainScalar(node) && (node.Scalar() == "true" || node.Scalar() == "false")) {
    out = node.Scalar() == "true";
    return true;
  }
  Report(node, path + " must be true or false, not " + Shown(node));
  return false;
}

bool PolicyValidator::Int(const YAML::Node& node, const std::string& path, int64_t min, int64_t max,
                          int64_t& out) {
  int64_t value = 0;
  bool parsed = false;
  if (IsPlainScalar(node)) {
    const std::string& s = node.Scalar();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    parsed = ec == std::errc() && end == s.data() + s.size() && !s.empty();
  }
  if (!parsed) {
    Report(node, path + " must be a whole number, not " + Shown(node));
    return false;
  }
  if (value < min || value > max) {
    Report(node,
           path +
               (max == std::numeric_limits<int64_t>::max()
                    ? " must be at least " + std::to_string(min)
                    : " must be between " + std::to_string(min) + " and " + std::to_string(max)) +
               ", not " + std::to_string(value));
    return false;
  }
  out = value;
  return true;
}

bool PolicyValidator::Int(const YAML::Node& node, const std::string& path, int min, int max,
                          int& out) {
  int64_t value = 0;
  if (!Int(node, path, int64_t{min}, int64_t{max}, value)) return false;
  out = static_cast<int>(value);
  return true;
}

bool PolicyValidator::Number(const YAML::Node& node, const std::string& path, double min,
                             double max, double& out) {
  double value = 0;
  bool parsed = false;
  if (IsPlainScalar(node)) {
    const std::string& s = node.Scalar();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    parsed = ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(value);
  }
  if (!parsed) {
    Report(node, path + " must be a number, not " + Shown(node));
    return false;
  }
  if (value < min || value > max) {
    Report(node, path +
                     (max == std::numeric_limits<double>::max()
                          ? " must be at least " + NumberText(min)
                          : " must be between " + NumberText(min) + " and " + NumberText(max)) +
                     ", not " + NumberText(value));
    return false;
  }
  out = value;
  return true;
}

bool PolicyValidator::MemoryMib(const YAML::Node& node, const std::string& path, int64_t& out) {
  bool ok = false;
  int64_t mib = 0;
  if (node.IsScalar() && !node.Scalar().empty()) {
    const std::string& s = node.Scalar();
    if (std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mib);
      ok = ec == std::errc() && end == s.data() + s.size();
    } else {
      auto parsed = ParseMemoryMib(s);
      ok = parsed.ok();
      if (ok) mib = parsed.value();
    }
  }
  if (!ok) {
    Report(node, path + " must be a memory size such as 20Gi, 20000Mi or 20000 (MiB), not " +
                     Shown(node));
    return false;
  }
  out = mib;
  return true;
}

namespace {

// `read` into a value, and the value into `out` when it is valid.
template <typename T, typename Read>
bool IntoOptional(std::optional<T>& out, Read read) {
  T value{};
  if (!read(value)) return false;
  out = value;
  return true;
}

}  // namespace

bool PolicyValidator::Int(const YAML::Node& node, const std::string& path, int64_t min,
                          int64_t max, std::optional<int64_t>& out) {
  return IntoOptional(out, [&](int64_t& value) { return Int(node, path, min, max, value); });
}

bool PolicyValidator::Int(const YAML::Node& node, const std::string& path, int min, int max,
                          std::optional<int>& out) {
  return IntoOptional(out, [&](int& value) { return Int(node, path, min, max, value); });
}

bool PolicyValidator::Number(const YAML::Node& node, const std::string& path, double min,
                             double max, std::optional<double>& out) {
  return IntoOptional(out, [&](double& value) { return Number(node, path, min, max, value); });
}

bool PolicyValidator::MemoryMib(const YAML::Node& node, const std::string& path,
                                std::optional<int64_t>& out) {
  return IntoOptional(out, [&](int64_t& value) { return MemoryMib(node, path, value); });
}

bool PolicyValidator::StringList(const YAML::Node& node, const std::string& path,
                                 std::vector<std::string>& out) {
  std::vector<std::string> items;
  bool all = true;
  bool list = List(node, path, [&](const YAML::Node& item, const std::string& at) {
    std::string s;
    all = String(item, at, s) && all;
    items.push_back(std::move(s));
  });
  if (!list || !all) return false;
  out = std::move(items);
  return true;
}

bool PolicyValidator::MigProfileName(const YAML::Node& node, const std::string& path,
                                     std::string& out) {
  std::string name;
  if (!String(node, path, name)) return false;
  if (!ParseMigResource(std::string(kMigResourcePrefix) + name)) {
    Report(node, path + " must be a MIG profile such as 1g.10gb or 3g.40gb, not \"" + name + "\"");
    return false;
  }
  out = name;
  return true;
}

}  // namespace gpuadmit
