#include "core/json/json_writer.h"

#include <charconv>
#include <cstdint>
#include <string_view>

#include "core/json/utf8.h"
#include "core/text/plain_run.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// What dump() writes for a byte below 0x20 (other than its short escapes), and for '"' and '\'.
void AppendEscape(unsigned char c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      out.append(escape, sizeof escape);
    }
  }
}

bool AppendString(std::string_view s, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  out += '"';
  size_t plain = 0;  // start of the run not yet copied
  bool ascii = true;
  for (size_t i = PlainRun(s); i < n; i += 1 + PlainRun(s.substr(i + 1))) {
    if (p[i] >= 0x80) {
      ascii = false;
      continue;
    }
    out.append(s.data() + plain, i - plain);
    AppendEscape(p[i], out);
    plain = i + 1;
  }
  if (!ascii && FirstInvalidUtf8(s) != std::string_view::npos) return false;
  out.append(s.data() + plain, n - plain);
  out += '"';
  return true;
}

template <typename Integer>
void AppendInteger(Integer n, std::string& out) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

// The value nests no deeper than what the request path built: at most kMaxJsonDepth.
bool Append(const json& value, std::string& out) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        if (!AppendString(key, out)) return false;
        out += ':';
        if (!Append(member, out)) return false;
      }
      out += '}';
      return true;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& element : value.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        if (!Append(element, out)) return false;
      }
      out += ']';
      return true;
    }
    case json::value_t::string:
      return AppendString(value.get_ref<const std::string&>(), out);
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return true;
    case json::value_t::number_integer:
      AppendInteger(value.get<int64_t>(), out);
      return true;
    case json::value_t::number_unsigned:
      AppendInteger(value.get<uint64_t>(), out);
      return true;
    case json::value_t::number_float:
      out += value.dump();  // rare in what gpuadmit writes; dump() has the shortest round trip
      return true;
    case json::value_t::null:
      out += "null";
      return true;
    case json::value_t::binary:
    case json::value_t::discarded:
      return false;
  }
  return false;
}

}  // namespace

bool AppendJsonString(std::string_view s, std::string& out) {
  const size_t size = out.size();
  if (AppendString(s, out)) return true;
  out.resize(size);
  return false;
}

bool AppendJson(const json& value, std::string& out) {
  const size_t size = out.size();
  out.reserve(size + 1024);  // a review's patch: one allocation, not ten doublings
  if (Append(value, out)) return true;
  out.resize(size);
  return false;
}

}  // namespace gpuadmit
