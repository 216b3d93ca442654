// ParseJsonKeeping: JSON text to nlohmann::json, building only the fields a FieldTrie names, with
// simdjson's On-Demand reader (Debian libsimdjson-dev). Values the trie does not name are skipped
// by simdjson's structural index without being tokenized, which is most of a 4 KB Pod or watch
// event: the inventory's reflectors read about 300 bytes of it.
//
//   auto pod = ParseJsonKeeping(body, PodFields(), /*max_depth=*/512);
//
// The text is UTF-8-validated whole and its structure checked; unlike ParseJson, scalars inside
// skipped values are not parsed, so a document that is malformed only there may be accepted. Use
// it for what the Kubernetes API serves, not for admission requests.
//
// Thread safety: pure function (a parser per thread is kept between calls).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json/field_trie.h"
#include "core/result.h"

namespace gpuadmit {

// Errors: "invalid JSON at byte N: <reason>" (without "at byte N" when simdjson cannot say, as
// for invalid UTF-8), or "JSON nests deeper than <max_depth> levels".
// Duplicate keys keep the last value.
Result<nlohmann::json> ParseJsonKeeping(std::string_view text, const FieldTrie& keep,
                                        int max_depth);

}  // namespace gpuadmit
