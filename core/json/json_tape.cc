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

}  // namespace

JsonTape::JsonTape() : document_(std::make_unique<dom::document>()) {}

JsonTape::~JsonTape() = default;

std::unique_ptr<const JsonTape> JsonTape::Parse(std::string_view text, size_t max_depth) {
  thread_local ThreadParser thread;
  if (thread.max_depth != max_depth) {
    if (thread.parser.allocate(text.size(), max_depth) != simdjson::SUCCESS) return nullptr;
    thread.max_depth = max_depth;
  }
  thread.scratch.assign(text);
  thread.scratch.append(simdjson::SIMDJSON_PADDING, '\0');
  std::unique_ptr<JsonTape> tape(new JsonTape());
  dom::element root;
  if (thread.parser
          .parse_into_document(*tape->document_,
                               reinterpret_cast<const uint8_t*>(thread.scratch.data()), text.size(),
                               false)
          .get(root) != simdjson::SUCCESS) {
    return nullptr;
  }
  return tape;
}

JsonView JsonTape::root() const { return JsonView::FromTape(document_->root()); }

}  // namespace gpuadmit
