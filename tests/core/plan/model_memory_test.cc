#include "core/plan/model_memory.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

TEST(ModelNameMatches, ASizeMatchesOnlyAtTheStartOfANumber) {
  struct Case {
    const char* model;
    const char* pattern;
    bool matches;
  } cases[] = {
      {"llama-3-70b", "70b", true},
      {"Meta-Llama-3.1-70B-Instruct", "70b", true},
      {"Llama-2-7b-chat", "7b", true},
      {"mixtral-8x7b", "7b", true},
      {"bigscience/bloom-7b1", "7b", true},
      {"Qwen1.5-17B", "7b", false},
      {"qwen2.5-72b", "7b", false},
      {"phi-2.7b", "7b", false},
      {"llama-2-13b", "3b", false},
      {"LLAMA", "llama", true},  // a pattern that is not a size: any substring
      {"codellama", "llama", true},
      {"7b", "7b", true},
      {"7", "7b", false},
      {"anything", "", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ModelNameMatches(c.model, c.pattern), c.matches) << c.model << " / " << c.pattern;
  }
}

TEST(ModelMemoryMib, SeedOneHeuristicFirstRuleWinsElseTheDefault) {
  RequirementsPolicy policy;
  struct Case {
    const char* model;
    int64_t mib;
    const char* rule;
  } cases[] = {
      {"llama-3-70b", 80000, "70b"},  // 20,000 per GPU over 4, all on the one GPU
      {"huggyllama/llama-65b", 80000, "65b"},
      {"meta-llama/Llama-2-13b-hf", 12000, "13b"},
      {"Llama-2-7b-chat", 12000, "7b"},
      {"mixtral-8x7b", 12000, "7b"},
      {"qwen2.5-72b", 8000, ""},  // no rule for 72B: the default
      {"facebook/opt-125m", 8000, ""},
  };
  for (const Case& c : cases) {
    ModelMemory m = ModelMemoryMib(c.model, policy);
    EXPECT_EQ(m.mib, c.mib) << c.model;
    EXPECT_EQ(m.rule, c.rule) << c.model;
  }
}

TEST(ModelMemoryMib, ARuleSplitOverNGpusIsSpreadOverThePodsGpusNeverBelowItsFigure) {
  RequirementsPolicy policy;  // 70b: 20,000 MiB per GPU over 4 GPUs
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy, 1).mib, 80000);
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy, 2).mib, 40000);
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy, 3).mib, 26667);  // rounded up
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy, 4).mib, 20000);
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy, 8).mib, 20000);  // never below the figure
  EXPECT_EQ(ModelMemoryMib("llama-2-13b", policy, 1).mib, 12000);  // no split: per GPU as is
  EXPECT_EQ(ModelMemoryMib("llama-2-13b", policy, 4).mib, 12000);
}

TEST(ModelMemoryMib, ThePolicysRulesAndDefaultReplaceTheSeeds) {
  RequirementsPolicy policy;
  policy.model_memory = {{"72b", 40000}, {"qwen", 16000}};
  policy.default_model_memory_mib = 4000;
  EXPECT_EQ(ModelMemoryMib("Qwen2.5-72B", policy).mib, 40000);
  EXPECT_EQ(ModelMemoryMib("Qwen2.5-7B", policy).mib, 16000);
  EXPECT_EQ(ModelMemoryMib("llama-3-70b", policy).mib, 4000);
}

}  // namespace
}  // namespace gpuadmit
