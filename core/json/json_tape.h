// JsonTape: JSON text parsed by simdjson's DOM parser (Debian libsimdjson-dev) into a tape this
// object owns, read through JsonView. The review reads the request off it directly, where it
// once built an nlohmann DOM of the fields decisions read.
//
//   auto tape = JsonTape::Parse(body, kMaxJsonDepth);
//   if (tape == nullptr) -> not JSON simdjson accepts: take the nlohmann path, which says why
//   JsonView root = tape->root();
//
// The text is fully validated: UTF-8, structure and every scalar. simdjson refuses a little
// that nlohmann's readers accept (a lone surrogate escape, an integer past 64 bits), and nesting
// deeper than `max_depth`: the caller falls back on those.
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
  // given, says why: "JSON nests deeper than N levels" or "invalid JSON: <simdjson's reason>".
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
