// ParseJson: JSON text to an nlohmann::json value, for the few small documents that are kept or
// edited whole (an API server's answers: a Lease, a Pod, the version). Parsed and validated as
// every JSON document gpuadmit reads is, by JsonTape (core/json/json_tape.h), then copied off
// the tape; what reads a document without keeping it reads the tape itself.
//
//   auto doc = ParseJson(body);
//   if (!doc.ok()) -> doc.error().message, e.g. "invalid JSON at byte 17: invalid UTF-8"
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

// Parses `text` whole. Errors are JsonTape's: bad syntax, invalid UTF-8, a raw control
// character, nesting deeper than kMaxJsonDepth. Duplicate keys keep the last value, as
// nlohmann's own parser does.
Result<nlohmann::json> ParseJson(std::string_view text);

}  // namespace gpuadmit
