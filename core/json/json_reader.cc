#include "core/json/json_reader.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>
#include <rapidjson/stream.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>


namespace gpuadmit {
namespace {

using nlohmann::json;

// Builds the DOM from RapidJSON's events. A skipped value still has to be read to its end, so
// the builder counts its nesting and drops every event until it closes.
class DomBuilder {
 public:
  // Parsing is in situ: keys point into the buffer, which outlives the parse.
  explicit DomBuilder(const JsonReadOptions& options) : options_(options) {}

  json root;
  bool too_deep = false;
  bool lone_surrogate = false;

  bool Null() { return Put(nullptr); }
  bool Bool(bool b) { return Put(b); }
  bool Int(int i) { return Put(static_cast<int64_t>(i)); }
  bool Uint(unsigned u) { return Put(static_cast<uint64_t>(u)); }
  bool Int64(int64_t i) { return Put(i); }
  bool Uint64(uint64_t u) { return Put(u); }
  bool Double(double d) { return Put(d); }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return false; }  // not requested
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (HasSurrogate(s, n)) return Refuse();
    return Put(std::string(s, n));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (HasSurrogate(s, n)) return Refuse();
    if (skipping_ > 0) return true;
    key_ = std::string_view(s, n);
    return true;
  }
  bool StartObject() { return Open(json::value_t::object); }
  bool StartArray() { return Open(json::value_t::array); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

 private:
  // RapidJSON 1.1.0 turns a "\uDC00"-style escape of a lone low surrogate into the bytes ED B0 80,
  // which are not UTF-8 (it refuses a lone high surrogate itself). The text was validated
  // before parsing, so such bytes can only come from an escape. Found by the review fuzz target.
  static bool HasSurrogate(const char* s, rapidjson::SizeType n) {
    for (const char* p = s; (p = static_cast<const char*>(std::memchr(p, '\xED', s + n - p)));
         ++p) {
      if (p + 1 < s + n && static_cast<unsigned char>(p[1]) >= 0xA0) return true;
    }
    return false;
  }
  bool Refuse() {
    lone_surrogate = true;
    return false;
  }

  // Whether the value about to be placed under key_ at the current depth is to be skipped.
  bool SkipNext() const {
    if (stack_.empty() || !stack_.back()->is_object()) return false;
    for (const JsonKeyPath& path : options_.skip) {
      if (path.size() != stack_.size()) continue;
      bool match = true;
      for (size_t i = 0; i < path.size() && match; ++i) {
        std::string_view have = i + 1 < path.size() ? keys_[i + 1] : key_;
        match = path[i] == "*" || path[i] == have;
      }
      if (match) return true;
    }
    return false;
  }

  template <typename V>
  bool Put(V&& value) {
    if (skipping_ > 0) return true;
    if (SkipNext()) return true;
    Place(json(std::forward<V>(value)));
    return true;
  }

  json* Place(json value) {
    if (stack_.empty()) {
      root = std::move(value);
      return &root;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      auto& array = top->get_ref<json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    auto& object = top->get_ref<json::object_t&>();
    // A duplicate key keeps the last value, as nlohmann's own parser does.
    return &object.insert_or_assign(std::string(key_), std::move(value)).first->second;
  }

  bool Open(json::value_t type) {
    if (skipping_ > 0 || SkipNext()) {
      ++skipping_;
      return true;
    }
    if (static_cast<int>(stack_.size()) >= options_.max_depth) {
      too_deep = true;
      return false;
    }
    // The key path is for skip lists only.
    if (!options_.skip.empty()) {
      keys_.emplace_back(stack_.empty() || stack_.back()->is_array() ? std::string_view() : key_);
    }
    stack_.push_back(Place(json(type)));
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    stack_.pop_back();
    if (!options_.skip.empty()) keys_.pop_back();
    return true;
  }

  const JsonReadOptions& options_;
  std::vector<json*> stack_;             // the open containers, outermost first
  std::vector<std::string_view> keys_;   // with skip lists: the key each open container sits under
  std::string_view key_;                 // into the in-situ buffer
  int skipping_ = 0;                     // nesting inside a skipped value
};

}  // namespace

// Eight ASCII bytes are checked at once: Kubernetes objects are nearly all ASCII, and this runs
// about 10x faster than validating inside the lexer.
size_t FirstInvalidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, p + i, sizeof word);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    unsigned char low = 0x80;  // bounds of the second byte
    unsigned char high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > n || p[i + 1] < low || p[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

Result<json> ParseJson(std::string_view text, const JsonReadOptions& options) {
  // JSON has raw control characters only as whitespace outside strings (tab, line feed,
  // carriage return): every other one is refused here, with its byte. The in-situ stream below
  // would end at a NUL and accept what follows, and RapidJSON 1.1.0's SSE2 string scan lets
  // 0x1A-0x1F through inside a string (its compare stops at 0x19; found by the review fuzz
  // target).
  auto raw_control = std::find_if(text.begin(), text.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c < 0x20 && c != '\t' && c != '\n' && c != '\r';
  });
  if (raw_control != text.end()) {
    return Error{"invalid JSON at byte " + std::to_string(raw_control - text.begin()) +
                 (*raw_control == '\0' ? ": NUL byte" : ": an unescaped control character")};
  }
  if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    return Error{"invalid JSON at byte " + std::to_string(bad) + ": invalid UTF-8"};
  }
  rapidjson::Reader reader;
  rapidjson::ParseResult ok;
  // Iterative: RapidJSON's own recursion stays flat whatever the nesting. Not full precision:
  // RapidJSON 1.1.0's full-precision path reads "0e111" as 1.28e294 (found by fuzzing; see
  // ParseJson.AZeroWithALargeExponentIsZero); the normal path is exact for every number
  // gpuadmit decides on. UTF-8 was validated above; "\uD800"-style escapes are still checked.
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag;
  // In situ: RapidJSON unescapes strings over a private copy of the text and hands them over as
  // pointers, with its SIMD scanner; reading from the caller's text instead copies every string
  // byte by byte into its own stack (measured: a 3.4 KB review decodes in 24% fewer instructions).
  std::string buffer;
  // RapidJSON's SSE2 scanner loads whole aligned 16-byte blocks, reaching up to 15 bytes past the
  // terminating NUL: padding keeps those loads inside the buffer (ASan checks it). The parse
  // itself ends at the first NUL, and the text has none.
  constexpr size_t kSimdPadding = 16;
  buffer.assign(text);
  buffer.append(kSimdPadding, '\0');
  DomBuilder builder(options);
  rapidjson::InsituStringStream stream(buffer.data());
  ok = reader.Parse<kFlags | rapidjson::kParseInsituFlag>(stream, builder);
  if (builder.lone_surrogate) {
    return Error{"invalid JSON at byte " + std::to_string(ok.Offset()) +
                 ": a \\u escape of a lone surrogate"};
  }
  if (builder.too_deep) {
    return Error{"JSON nests deeper than " + std::to_string(options.max_depth) + " levels"};
  }
  if (!ok) {
    return Error{"invalid JSON at byte " + std::to_string(ok.Offset()) + ": " +
                 rapidjson::GetParseError_En(ok.Code())};
  }
  return std::move(builder.root);
}

}  // namespace gpuadmit
