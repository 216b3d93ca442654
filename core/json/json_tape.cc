#include "core/json/json_tape.h"

#include <simdjson.h>

#include <algorithm>
#include <string>

#include "core/json/utf8.h"

namespace gpuadmit {

namespace dom = simdjson::dom;

namespace {

// Why `text` was refused with `code`. A raw control character (JSON allows tab, line feed and
// carriage return, outside strings) or a byte that breaks UTF-8 makes any text invalid, so the
// first of them is named with its byte: simdjson's own reasons name none.
std::string Refusal(std::string_view text, simdjson::error_code code, size_t max_depth) {
  auto control = std::find_if(text.begin(), text.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c < 0x20 && c != '\t' && c != '\n' && c != '\r';
  });
  size_t control_at = static_cast<size_t>(control - text.begin());
  size_t utf8_at = FirstInvalidUtf8(text);
  if (utf8_at != std::string_view::npos && utf8_at < control_at) {
    return "invalid JSON at byte " + std::to_string(utf8_at) + ": invalid UTF-8";
  }
  if (control != text.end()) {
    return "invalid JSON at byte " + std::to_string(control_at) +
           (*control == '\0' ? ": NUL byte" : ": an unescaped control character");
  }
  if (code == simdjson::DEPTH_ERROR) {
    return "JSON nests deeper than " + std::to_string(max_depth) + " levels";
  }
  if (code == simdjson::NUMBER_ERROR) {  // also an integer past 64 bits
    return "invalid JSON: a number that is malformed or past 64 bits";
  }
  return std::string("invalid JSON: ") + simdjson::error_message(code);
}

}  // namespace

JsonTape::JsonTape() : document_(std::make_unique<dom::document>()) {}

JsonTape::~JsonTape() = default;

std::unique_ptr<const JsonTape> JsonTape::Parse(std::string_view text, size_t max_depth,
                                                 std::string* refusal) {
  auto refuse = [&](simdjson::error_code code) -> std::unique_ptr<const JsonTape> {
    if (refusal != nullptr) *refusal = Refusal(text, code, max_depth);
    return nullptr;
  };
  // A parser and a padded copy of the text for each parse: keeping them per thread saved 1.8%
  // of a served review's instructions, under the bar for state in core/.
  dom::parser parser;
  if (auto code = parser.allocate(text.size(), max_depth); code != simdjson::SUCCESS) {
    return refuse(code);
  }
  simdjson::padded_string padded(text);
  std::unique_ptr<JsonTape> tape(new JsonTape());
  dom::element root;
  if (auto code = parser
                      .parse_into_document(*tape->document_,
                                           reinterpret_cast<const uint8_t*>(padded.data()),
                                           text.size(), false)
                      .get(root);
      code != simdjson::SUCCESS) {
    return refuse(code);
  }
  return tape;
}

JsonView JsonTape::root() const { return JsonView::FromTape(document_->root()); }

}  // namespace gpuadmit
