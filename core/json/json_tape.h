// JsonTape: JSON text parsed by simdjson's DOM parser (Debian libsimdjson-dev) into a tape this
// object owns, read through JsonView. Every JSON document gpuadmit reads is parsed here:
// reviews, the inventory's List pages and watch events, metric answers, and (copied off the tape
// by ParseJson) the documents kept whole. Readers take what they need off the tape.
//
//   std::string why;
//   auto tape = JsonTape::Parse(body, kMaxJsonDepth, &why);
//   if (tape == nullptr) -> refused, and `why` says why
//   JsonView root = tape->root();
//
// The text is fully validated: UTF-8, structure and every scalar. An integer must fit 64 bits
// (signed or unsigned); a number with a fraction or exponent is a double, and one past the
// double range is refused, but a zero stays zero whatever its exponent ("0e550").
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

// Deepest JSON nesting accepted. Kubernetes objects nest about 20 deep; the apiserver's own
// decoder stops at 10,000. 512 keeps every recursive walk of a document far from the stack's end.
inline constexpr int kMaxJsonDepth = 512;

class JsonTape {
 public:
  // nullptr when simdjson refuses `text` (see above) or cannot allocate; then `refusal`, when
  // given, says why, naming the byte where the text holds invalid UTF-8 or a raw control
  // character ("invalid JSON at byte 25: invalid UTF-8", "...: an unescaped control character",
  // "...: NUL byte"), else "JSON nests deeper than N levels", "invalid JSON: a number that is
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
