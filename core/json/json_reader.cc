#include "core/json/json_reader.h"

#include <string>

#include "core/json/json_tape.h"

namespace gpuadmit {

Result<nlohmann::json> ParseJson(std::string_view text) {
  std::string refusal;
  auto tape = JsonTape::Parse(text, kMaxJsonDepth, &refusal);
  if (tape == nullptr) return Error{std::move(refusal)};
  return tape->root().ToJson();
}

}  // namespace gpuadmit
