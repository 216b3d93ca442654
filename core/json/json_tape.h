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
// Thread safety: Parse keeps one parser per thread, and each thread keeps the buffers of the
// last tape it destroyed for its next parse; a parsed tape is immutable and may be read, and
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
  // The texts a thread's own parser reads; its buffers grow to about ten bytes a byte of them.
  static constexpr size_t kLargestThreadText = 256 * 1024;

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
