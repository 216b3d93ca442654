#include "core/plan/parallelism.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/plan/command_line.h"

namespace gpuadmit {
namespace {

using Words = std::vector<std::string>;

int64_t Size(const Parallelism& p, ParallelDimension d) {
  const auto& s = p.sizes[static_cast<size_t>(d)];
  return s ? s->size : 0;
}

TEST(ParallelismFromArgs, EverySpellingOfEveryDimensionInBothForms) {
  struct Case {
    const char* flag;
    ParallelDimension dimension;
  } cases[] = {
      // vLLM
      {"--tensor-parallel-size", ParallelDimension::kTensor},
      {"-tp", ParallelDimension::kTensor},
      {"--pipeline-parallel-size", ParallelDimension::kPipeline},
      {"-pp", ParallelDimension::kPipeline},
      {"--data-parallel-size", ParallelDimension::kData},
      {"-dp", ParallelDimension::kData},
      {"--decode-context-parallel-size", ParallelDimension::kDecodeContext},
      {"-dcp", ParallelDimension::kDecodeContext},
      {"--context-parallel-size", ParallelDimension::kContext},
      // SGLang
      {"--tp-size", ParallelDimension::kTensor},
      {"--tp", ParallelDimension::kTensor},
      {"--pp-size", ParallelDimension::kPipeline},
      {"--dp-size", ParallelDimension::kData},
      {"--dp", ParallelDimension::kData},
      // seed 001's underscore names
      {"--tp_size", ParallelDimension::kTensor},
      {"--pp_size", ParallelDimension::kPipeline},
      {"--dp_size", ParallelDimension::kData},
      {"--cp_size", ParallelDimension::kContext},
      {"--dcp_size", ParallelDimension::kDecodeContext},
      {"--cp-size", ParallelDimension::kContext},
      {"--dcp-size", ParallelDimension::kDecodeContext},
      {"--pp", ParallelDimension::kPipeline},
      {"--cp", ParallelDimension::kContext},
      {"--dcp", ParallelDimension::kDecodeContext},
  };
  for (const Case& c : cases) {
    for (const Words& words :
         {Words{"serve", "m", c.flag, "3"}, Words{"serve", "m", std::string(c.flag) + "=3"}}) {
      Parallelism p = ParallelismFromArgs(words);
      EXPECT_EQ(Size(p, c.dimension), 3) << ::testing::PrintToString(words);
      EXPECT_EQ(p.sizes[static_cast<size_t>(c.dimension)]->source, "args");
      EXPECT_TRUE(p.problems.empty());
    }
  }
}

TEST(Parallelism, WorldSizeIsTpTimesPpTimesTheLargestOfDpCpDcp) {
  struct Case {
    const char* args;
    int64_t world;
  } cases[] = {
      {"vllm serve m", 1},
      {"vllm serve m --tp 4", 4},
      {"vllm serve m --tp 4 --pp 2", 8},
      {"vllm serve m -tp 2 -pp 2 -dp 3", 12},
      {"vllm serve m -tp 2 -dp 2 -dcp 4", 8},
      {"vllm serve m -tp 2 --cp 3 -dcp 2 -dp 1", 6},
      {"sglang --tp-size 8 --dp-size 2", 16},
      {"x --pp 3", 3},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParallelismFromArgs(SplitShellWords(c.args)).WorldSize(), c.world) << c.args;
  }
}

TEST(ParallelismFromArgs, ValuesThatAreNotSizesAreProblemsNotDimensions) {
  for (const char* bad : {"0", "-2", "four", "4.5", "1025", "", "4x"}) {
    Parallelism p = ParallelismFromArgs({"--tp", bad});
    EXPECT_FALSE(p.Explicit()) << bad;
    ASSERT_EQ(p.problems.size(), 1u) << bad;
    EXPECT_EQ(p.problems[0],
              std::string("tp \"") + bad + "\" from args is not a size from 1 to 1024: ignored");
  }
  EXPECT_EQ(Size(ParallelismFromArgs({"--tp", "1024"}), ParallelDimension::kTensor), 1024);
}

TEST(ParallelismFromInputs, EveryInputNameAndTheFirstPresentWins) {
  struct Case {
    std::map<std::string, std::string, std::less<>> inputs;
    ParallelDimension dimension;
    int64_t size;
    const char* source;
  } cases[] = {
      {{{"tp-size", "2"}}, ParallelDimension::kTensor, 2, "tp-size"},
      {{{"tp_size", "2"}}, ParallelDimension::kTensor, 2, "tp_size"},
      {{{"tensor-parallel-size", "2"}}, ParallelDimension::kTensor, 2, "tensor-parallel-size"},
      {{{"tp", "2"}}, ParallelDimension::kTensor, 2, "tp"},
      {{{"tpsize", "2"}}, ParallelDimension::kTensor, 2, "tpsize"},  // seed 000
      {{{"tp", "8"}, {"tp-size", "4"}}, ParallelDimension::kTensor, 4, "tp-size"},
      {{{"pp-size", "3"}}, ParallelDimension::kPipeline, 3, "pp-size"},
      {{{"pipeline-parallel-size", "3"}},
       ParallelDimension::kPipeline,
       3,
       "pipeline-parallel-size"},
      {{{"dp_size", "5"}}, ParallelDimension::kData, 5, "dp_size"},
      {{{"cp", "6"}}, ParallelDimension::kContext, 6, "cp"},
      {{{"decode-context-parallel-size", "7"}},
       ParallelDimension::kDecodeContext,
       7,
       "decode-context-parallel-size"},
  };
  for (const Case& c : cases) {
    Parallelism p = ParallelismFromInputs(
        [&](std::string_view name) -> std::optional<std::pair<std::string, std::string>> {
          auto it = c.inputs.find(name);
          if (it == c.inputs.end()) return std::nullopt;
          return std::make_pair("key/" + it->first, it->second);
        });
    EXPECT_EQ(Size(p, c.dimension), c.size) << c.source;
    EXPECT_EQ(p.sizes[static_cast<size_t>(c.dimension)]->source, std::string("key/") + c.source);
  }
}

TEST(IsParallelismInput, NamesExactlyWhatParallelismFromInputsAsksFor) {
  std::vector<std::string> asked;
  ParallelismFromInputs(
      [&](std::string_view name) -> std::optional<std::pair<std::string, std::string>> {
        asked.emplace_back(name);
        return std::nullopt;
      });
  EXPECT_EQ(asked.size(), 25u);
  for (const std::string& name : asked) EXPECT_TRUE(IsParallelismInput(name)) << name;
  for (const char* other : {"", "model", "gpu-memory", "workload-type", "tp-size ", "TP", "tp-"}) {
    EXPECT_FALSE(IsParallelismInput(other)) << other;
  }
}

TEST(Parallelism, ArgumentsWinAndInputsFillTheDimensionsTheyLack) {
  Parallelism p = ParallelismFromArgs({"--tp", "4"});
  Parallelism inputs;
  inputs.sizes[0] = ParallelSize{2, "gpuadmit.io/tp-size"};
  inputs.sizes[1] = ParallelSize{2, "gpuadmit.io/pp-size"};
  p.FillFrom(inputs);
  EXPECT_EQ(p.WorldSize(), 8);
  EXPECT_EQ(p.Describe(), "tp 4 (args) x pp 2 (gpuadmit.io/pp-size)");
}

TEST(Parallelism, DescribeShowsTheDataDimensionsAsTheirMaximum) {
  EXPECT_EQ(ParallelismFromArgs(SplitShellWords("--tp 2 --dp 3")).Describe(),
            "tp 2 (args) x dp 3 (args)");
  EXPECT_EQ(ParallelismFromArgs(SplitShellWords("--tp 2 --dp 3 --dcp 4")).Describe(),
            "tp 2 (args) x max(dp 3 (args), dcp 4 (args))");
  EXPECT_EQ(Parallelism().Describe(), "");
  EXPECT_FALSE(Parallelism().Explicit());
}

}  // namespace
}  // namespace gpuadmit
