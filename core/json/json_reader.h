// ParseJson: JSON text to nlohmann::json, for whole documents: DecodeAdmissionReview (reviews the
// tape does not take) and large inventories. RapidJSON's SAX reader does the lexing (about 6x
// nlohmann's lexer on a 3 KB review) and UTF-8 validation; the DOM is nlohmann's. Nesting is
// bounded, and subtrees no decision reads (metadata.managedFields, status) can be dropped while
// parsing.
//
//   constexpr std::string_view kStatus[] = {"status"};
//   constexpr JsonKeyPath kSkips[] = {kStatus};
//   JsonReadOptions options;
//   options.skip = kSkips;
//   auto doc = ParseJson(body, options);
//   if (!doc.ok()) -> doc.error().message, e.g. "invalid JSON at byte 17: missing a comma"
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// A path of object keys from the root; "*" matches any key at its level.
using JsonKeyPath = std::span<const std::string_view>;

struct JsonReadOptions {
  int max_depth = 512;
  std::span<const JsonKeyPath> skip;  // values at these paths are left out of the DOM
};

// Parses `text` whole. Errors name the byte offset and what is wrong: bad syntax, invalid UTF-8,
// nesting deeper than max_depth. Duplicate keys keep the last value, as nlohmann does.
Result<nlohmann::json> ParseJson(std::string_view text, const JsonReadOptions& options = {});

// The offset of the first byte of `text` that breaks UTF-8 (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or std::string_view::npos when it is all UTF-8.
size_t FirstInvalidUtf8(std::string_view text);

}  // namespace gpuadmit
