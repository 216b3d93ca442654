#include "core/json/json_tape.h"

#include <simdjson.h>

#include <string>

namespace gpuadmit {
namespace {

namespace dom = simdjson::dom;

// A parser per thread (its buffers grow to the largest text it has read), and the padded copy
// of the text that simdjson reads past its end.
struct ThreadParser {
  dom::parser parser;
  std::string scratch;
  size_t max_depth = 0;
};

// Each thread keeps the document of the last tape it freed for its next parse. A document's
// buffers (eight bytes of tape for each byte of text) would otherwise be allocated and freed by
// every review, and at that size the allocator takes its slow path. Documents for texts larger
// than this are freed, so a thread holds at most about 600 KiB.
constexpr size_t kLargestSpareText = 64 * 1024;
thread_local std::unique_ptr<dom::document> spare_document;

std::unique_ptr<dom::document> TakeSpareDocument() {
  if (spare_document != nullptr) return std::move(spare_document);
  return std::make_unique<dom::document>();
}

}  // namespace

JsonTape::JsonTape() : document_(TakeSpareDocument()) {}

JsonTape::~JsonTape() {
  if (spare_document == nullptr && document_->capacity() <= kLargestSpareText) {
    spare_document = std::move(document_);
  }
}

std::unique_ptr<const JsonTape> JsonTape::Parse(std::string_view text, size_t max_depth,
                                                 std::string* refusal) {
  thread_local ThreadParser thread;
  std::unique_ptr<ThreadParser> once;  // for a text larger than a thread's parser reads
  if (text.size() > kLargestThreadText) once = std::make_unique<ThreadParser>();
  ThreadParser& p = once != nullptr ? *once : thread;
  auto refuse = [&](simdjson::error_code code) -> std::unique_ptr<const JsonTape> {
    if (refusal != nullptr) {
      if (code == simdjson::DEPTH_ERROR) {
        *refusal = "JSON nests deeper than " + std::to_string(max_depth) + " levels";
      } else if (code == simdjson::NUMBER_ERROR) {  // also an integer past 64 bits
        *refusal = "invalid JSON: a number that is malformed or past 64 bits";
      } else {
        *refusal = std::string("invalid JSON: ") + simdjson::error_message(code);
      }
    }
    return nullptr;
  };
  if (p.max_depth != max_depth) {
    if (auto code = p.parser.allocate(text.size(), max_depth); code != simdjson::SUCCESS) {
      return refuse(code);
    }
    p.max_depth = max_depth;
  }
  p.scratch.assign(text);
  p.scratch.append(simdjson::SIMDJSON_PADDING, '\0');
  std::unique_ptr<JsonTape> tape(new JsonTape());
  dom::element root;
  if (auto code = p.parser
                      .parse_into_document(*tape->document_,
                                           reinterpret_cast<const uint8_t*>(p.scratch.data()),
                                           text.size(), false)
                      .get(root);
      code != simdjson::SUCCESS) {
    return refuse(code);
  }
  return tape;
}

JsonView JsonTape::root() const { return JsonView::FromTape(document_->root()); }

}  // namespace gpuadmit
