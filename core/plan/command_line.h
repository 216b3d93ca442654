// A container's command line as an inference server reads it: the tokens of `command` and
// `args` (a token holding spaces, as in `sh -c "vllm serve m --tp 4"`, is split the way a shell
// would split it), the value of a flag (`--flag value` or `--flag=value`), and the model an
// inference server (vLLM, SGLang, TGI) is told to serve.
//
//   std::vector<std::string> tokens = CommandLineOf(container);  // {"vllm","serve","m","--tp","4"}
//   FlagValue(tokens, {"--tp", "--tensor-parallel-size"});        // "4"
//   ServedModel(tokens);                                          // "m"
//
// Thread safety: pure functions.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json_view.h"

namespace gpuadmit {

// Splits a shell command string into words: whitespace separates, single quotes keep everything
// literally, double quotes keep whitespace (a backslash escapes `"` and `\` inside them), a
// backslash outside quotes escapes the next character. An unterminated quote runs to the end.
// Operators (`&&`, `;`, `|`) are not special: they become words of their own when spaced.
std::vector<std::string> SplitShellWords(std::string_view text);

// The words of a container's `command` then `args`. Each string holding whitespace is split
// with SplitShellWords; non-string entries are skipped. A container that is not an object has
// none.
std::vector<std::string> CommandLineOf(JsonView container);

// The value of the last occurrence of any of `names` ("--tp", "-tp"): the next word for
// `--tp 4`, the rest of the word for `--tp=4`. nullopt when none occurs, or when the last one
// is the final word.
std::optional<std::string> FlagValue(const std::vector<std::string>& words,
                                     std::span<const std::string_view> names);
std::optional<std::string> FlagValue(const std::vector<std::string>& words,
                                     std::initializer_list<std::string_view> names);

// The model an inference server serves: --model, --model-path (SGLang), --model-id (TGI),
// else the first word after `serve` that is not a flag (`vllm serve MODEL`); then, only when
// none of these is given, --served-model-name. nullopt when none is.
std::optional<std::string> ServedModel(const std::vector<std::string>& words);

}  // namespace gpuadmit
