#include "core/plan/command_line.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

using nlohmann::json;
using Words = std::vector<std::string>;

TEST(SplitShellWords, SplitsOnRunsOfWhitespaceAndKeepsQuotedTextWhole) {
  struct Case {
    const char* text;
    Words words;
  } cases[] = {
      {"vllm serve m  --tp 4\n", {"vllm", "serve", "m", "--tp", "4"}},
      {"  ", {}},
      {"echo 'a b' \"c d\"", {"echo", "a b", "c d"}},
      {"x='--tp 4'", {"x=--tp 4"}},
      {R"(say "a \"quoted\" \\ word")", {"say", R"(a "quoted" \ word)"}},
      {R"('single \ keeps' back\ slash)", {R"(single \ keeps)", "back slash"}},
      {"''", {""}},
      {"unterminated 'quote runs on", {"unterminated", "quote runs on"}},
      {"a && b; c", {"a", "&&", "b;", "c"}},
  };
  for (const Case& c : cases) EXPECT_EQ(SplitShellWords(c.text), c.words) << c.text;
}

TEST(CommandLineOf, JoinsCommandAndArgsAndSplitsShellStrings) {
  json container = json::parse(R"({
    "command": ["sh", "-c"],
    "args": ["vllm serve meta-llama/Llama-3-70B --tensor-parallel-size 4 --port 8000"]
  })");
  EXPECT_EQ(CommandLineOf(container), (Words{"sh", "-c", "vllm", "serve", "meta-llama/Llama-3-70B",
                                             "--tensor-parallel-size", "4", "--port", "8000"}));
}

TEST(CommandLineOf, SkipsWhatIsNotAString) {
  EXPECT_EQ(CommandLineOf(json::parse(R"({"command": "vllm", "args": ["--tp", 4, null, "2"]})")),
            (Words{"--tp", "2"}));
  EXPECT_EQ(CommandLineOf(json::array()), Words{});
  EXPECT_EQ(CommandLineOf(json::object()), Words{});
}

TEST(FlagValue, ReadsBothFormsAndTheLastOccurrenceWins) {
  struct Case {
    Words words;
    std::optional<std::string> value;
  } cases[] = {
      {{"--tp", "4"}, "4"},
      {{"--tp=4"}, "4"},
      {{"-tp", "2"}, "2"},
      {{"--tp", "2", "--tensor-parallel-size=8"}, "8"},
      {{"--tp=2", "--tp", "3"}, "3"},
      {{"--tp"}, std::nullopt},            // no value follows
      {{"--tp-size", "4"}, std::nullopt},  // another flag, not a prefix match
      {{"--tpx=4"}, std::nullopt},
      {{"serve", "m"}, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FlagValue(c.words, {"--tp", "-tp", "--tensor-parallel-size"}), c.value)
        << ::testing::PrintToString(c.words);
  }
}

TEST(ServedModel, FlagsThenServePositionalThenServedModelName) {
  struct Case {
    Words words;
    std::optional<std::string> model;
  } cases[] = {
      {{"vllm", "serve", "meta-llama/Llama-2-7b-chat-hf", "--tp", "2"},
       "meta-llama/Llama-2-7b-chat-hf"},
      {{"python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-72B"},
       "Qwen/Qwen2.5-72B"},
      {{"python", "-m", "vllm.entrypoints.openai.api_server", "--model=mistral-7b"}, "mistral-7b"},
      {{"text-generation-launcher", "--model-id", "bigscience/bloom-7b1"}, "bigscience/bloom-7b1"},
      {{"vllm", "serve", "--model", "m1"}, "m1"},
      {{"vllm", "serve", "m2", "--served-model-name", "alias"}, "m2"},
      {{"server", "--served-model-name", "llama-70b"}, "llama-70b"},
      {{"vllm", "serve"}, std::nullopt},
      {{"python", "app.py"}, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ServedModel(c.words), c.model) << ::testing::PrintToString(c.words);
  }
}

}  // namespace
}  // namespace gpuadmit
