// JsonTape: JSON text parsed by simdjson's DOM parser (Debian libsimdjson-dev) into a tape this
// object owns, read through JsonView: reviews, and the inventory's List pages and watch events.
// Nothing else is built: readers take what they need off the tape.
//
//   std::string why;
//   auto tape = JsonTape::Parse(body, kMaxJsonDepth, &why);
//   if (tape == nullptr) -> refused, and `why` says why
//   JsonView root = tape->root();
//
// The text is fully validated: UTF-8, structure and every scalar. simdjson refuses a little
// that ParseJson accepts (an integer past 64 bits, which RapidJSON reads as a double), and
// nesting deeper than `max_depth`.
//
// Thread safety: Parse is a pure function; a parsed tape is immutable and may be read, and
// destroyed, on any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/json/json_view.h"

namespace simdjson::dom {
class document;
}  // namespace simdjson::dom

namespace gpuadmit {

class JsonTape {
 public:
  // nullptr when simdjson refuses `text` (see above) or cannot allocate; then `refusal`, when
  // given, says why: "JSON nests deeper than N levels", "invalid JSON: a number that is
  // malformed or past 64 bits", or "invalid JSON: <simdjson's reason>".
  static std::unique_ptr<const JsonTape> Parse(std::string_view text, size_t max_depth,
                                               std::string* refusal = nullptr);

  ~JsonTape();
  JsonTape(const JsonTape&) = delete;
  JsonTape& operator=(const JsonTape&) = delete;

  JsonView root() const;

 private:
  JsonTape();
  std::unique_ptr<simdjson::dom::document> document_;
};

}  // namespace gpuadmit
