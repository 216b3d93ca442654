#include "core/plan/sharing_rules.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

TEST(SharingSelector, EachKindMatchesAndMisses) {
  ViewMap labels = {{"tier", "gold"}, {"team", "search"}};
  SharingFacts facts{"ml", &labels, "inference", 1, 12000};
  struct Case {
    const char* name;
    SharingSelector selector;
    bool matches;
  } cases[] = {
      {"empty", {}, true},
      {"namespace", {.namespaces = {"other", "ml"}}, true},
      {"other namespace", {.namespaces = {"default"}}, false},
      {"labels", {.pod_labels = {{"team", "search"}, {"tier", "gold"}}}, true},
      {"one label differs", {.pod_labels = {{"team", "search"}, {"tier", "silver"}}}, false},
      {"label missing", {.pod_labels = {{"owner", "x"}}}, false},
      {"workload type", {.workload_types = {"serving", "Inference"}}, true},
      {"other workload type", {.workload_types = {"training"}}, false},
      {"gpus in range", {.min_gpus = 1, .max_gpus = 1}, true},
      {"too few gpus", {.min_gpus = 2}, false},
      {"too many gpus", {.max_gpus = 0}, false},
      {"memory in range", {.min_memory_mib = 12000, .max_memory_mib = 12000}, true},
      {"too little memory", {.min_memory_mib = 12001}, false},
      {"too much memory", {.max_memory_mib = 11999}, false},
  };
  for (const Case& c : cases) EXPECT_EQ(SelectorMatches(c.selector, facts), c.matches) << c.name;
}

TEST(SharingSelector, UnknownFactsNeverMatchABound) {
  SharingFacts unknown{"ml", nullptr, "", 1, 0};
  EXPECT_FALSE(SelectorMatches({.max_memory_mib = 20000}, unknown));
  EXPECT_FALSE(SelectorMatches({.min_memory_mib = 0}, unknown));
  EXPECT_FALSE(SelectorMatches({.workload_types = {"inference"}}, unknown));
  EXPECT_FALSE(SelectorMatches({.pod_labels = {{"team", "x"}}}, unknown));
  EXPECT_TRUE(SelectorMatches({.min_gpus = 1}, unknown));
}

TEST(SharingModeNames, ParseWhatTheyPrint) {
  for (SharingMode m :
       {SharingMode::kExclusive, SharingMode::kMig, SharingMode::kMps, SharingMode::kTimeSlicing}) {
    EXPECT_EQ(ParseSharingMode(SharingModeName(m)), m);
  }
  EXPECT_EQ(ParseSharingMode("TimeSlicing"), SharingMode::kTimeSlicing);
  EXPECT_EQ(ParseSharingMode("time_slicing"), SharingMode::kTimeSlicing);
  EXPECT_EQ(ParseSharingMode("MPS"), SharingMode::kMps);
  EXPECT_EQ(ParseSharingMode("shared"), std::nullopt);
}

TEST(FirstMatchingRule, TheFirstInPolicyOrderWins) {
  ViewMap labels;
  SharingFacts facts{"ml", &labels, "inference", 1, 0};
  std::vector<SharingRule> rules = {
      {"other-ns", 9, {.namespaces = {"default"}}, SharingMode::kMig, ""},
      {"inference", 5, {.workload_types = {"inference"}}, SharingMode::kMps, ""},
      {"everything", 1, {}, SharingMode::kTimeSlicing, ""}};
  EXPECT_EQ(FirstMatchingRule(rules, facts), &rules[1]);
  facts.workload_type = "batch";
  EXPECT_EQ(FirstMatchingRule(rules, facts), &rules[2]);
  EXPECT_EQ(FirstMatchingRule({}, facts), nullptr);
}

}  // namespace
}  // namespace gpuadmit
