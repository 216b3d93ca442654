#include "core/admission/json_patch.h"

#include "core/json/json_writer.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// A JSON value as text; one that is not UTF-8 is written with U+FFFD in place of each bad byte
// (the request was UTF-8, so only a bug makes one).
void AppendValue(const json& value, std::string& out) {
  if (!AppendJson(value, out)) out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

void JsonPatch::AppendString(std::string_view s, std::string& out) {
  if (!AppendJsonString(s, out)) AppendValue(json(std::string(s)), out);
}

const std::string& JsonPatch::Text() const {
  static const std::string kEmpty = "[]";
  return size_ == 0 ? kEmpty : operations_;
}

void JsonPatch::Begin(std::string_view op, const PatchPath& path) {
  if (size_++ > 0) {
    operations_.back() = ',';  // was the closing bracket
  } else {
    operations_.reserve(512);  // a review's patch: one allocation, not ten doublings
    operations_ += '[';
  }
  operations_ += R"({"op":")";
  operations_ += op;
  operations_ += R"(","path":)";
  AppendString(path.str(), operations_);
}

void JsonPatch::Add(const PatchPath& path, const json& value) {
  Begin("add", path);
  operations_ += R"(,"value":)";
  AppendValue(value, operations_);
  operations_ += "}]";
}

void JsonPatch::AddString(const PatchPath& path, std::string_view value) {
  Begin("add", path);
  operations_ += R"(,"value":)";
  AppendString(value, operations_);
  operations_ += "}]";
}

void JsonPatch::AddText(const PatchPath& path, std::string_view json_text) {
  Begin("add", path);
  operations_ += R"(,"value":)";
  operations_ += json_text;
  operations_ += "}]";
}

void JsonPatch::Remove(const PatchPath& path) {
  Begin("remove", path);
  operations_ += "}]";
}

void JsonPatch::Append(const JsonPatch& after) {
  if (after.empty()) return;
  if (empty()) {
    *this = after;
    return;
  }
  operations_.back() = ',';  // was the closing bracket
  operations_.append(after.operations_, 1);  // its operations, past its opening bracket
  size_ += after.size_;
}

json JsonPatch::ToJson() const { return json::parse(Text()); }

}  // namespace gpuadmit
