#include "core/kube/resource_list.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpuadmit {
namespace {

using Entries = std::vector<std::pair<std::string, int64_t>>;

Entries EntriesOf(const ResourceList& list) { return Entries(list.begin(), list.end()); }

TEST(ResourceList, IteratesByNameWhateverTheOrderOfInsertion) {
  ResourceList list;
  list["nvidia.com/mig-3g.40gb"] = 1;
  list["nvidia.com/gpu"] = 2;
  list["nvidia.com/mig-1g.10gb"] = 3;
  list["nvidia.com/gpu.shared"] = 4;
  EXPECT_EQ(EntriesOf(list), (Entries{{"nvidia.com/gpu", 2},
                                      {"nvidia.com/gpu.shared", 4},
                                      {"nvidia.com/mig-1g.10gb", 3},
                                      {"nvidia.com/mig-3g.40gb", 1}}));
}

TEST(ResourceList, InsertsKeepTheEntryAlreadyThereAsStdMapDoes) {
  ResourceList list{{"nvidia.com/gpu", 1}, {"nvidia.com/gpu", 5}};  // the first one wins
  EXPECT_EQ(Get(list, "nvidia.com/gpu"), 1);
  auto [at, inserted] = list.try_emplace("nvidia.com/gpu", 7);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(at->second, 1);
  EXPECT_FALSE(list.emplace("nvidia.com/gpu", 7).second);
  EXPECT_FALSE(list.insert({"nvidia.com/gpu", 7}).second);
  EXPECT_FALSE(list.insert_or_assign("nvidia.com/gpu", 7).second);
  EXPECT_EQ(Get(list, "nvidia.com/gpu"), 7);
  EXPECT_TRUE(list.insert_or_assign("nvidia.com/mig-1g.10gb", 2).second);
  EXPECT_EQ(list, (ResourceList{{"nvidia.com/mig-1g.10gb", 2}, {"nvidia.com/gpu", 7}}));
}

TEST(ResourceList, IndexingAnAbsentNameInsertsZeroAndGetDoesNot) {
  ResourceList list;
  EXPECT_EQ(Get(list, "nvidia.com/gpu"), 0);
  EXPECT_TRUE(list.empty());
  list["nvidia.com/gpu"] += 3;
  list["nvidia.com/gpu"] += 1;
  EXPECT_EQ(list.size(), 1u);
  EXPECT_EQ(Get(list, "nvidia.com/gpu"), 4);
  EXPECT_TRUE(list.contains("nvidia.com/gpu"));
  EXPECT_EQ(list.count("nvidia.com/gpu.shared"), 0u);
  EXPECT_EQ(list.find("nvidia.com/gpu.shared"), list.end());
}

TEST(ResourceList, NamesAreComparedWholeNotByPrefix) {
  ResourceList list{{"nvidia.com/gpu.shared", 2}};
  EXPECT_FALSE(list.contains("nvidia.com/gpu"));
  EXPECT_FALSE(list.contains("nvidia.com/gpu.shared.x"));
  EXPECT_EQ(Get(list, "nvidia.com/gpu.shared"), 2);
}

TEST(ResourceList, EraseByNameByPositionAndByPredicate) {
  ResourceList list{{"a", 0}, {"b", 2}, {"c", 0}, {"d", 4}};
  EXPECT_EQ(list.erase("x"), 0u);
  EXPECT_EQ(list.erase("b"), 1u);
  EXPECT_EQ(EntriesOf(list), (Entries{{"a", 0}, {"c", 0}, {"d", 4}}));
  EXPECT_EQ(erase_if(list, [](const auto& entry) { return entry.second == 0; }), 2u);
  EXPECT_EQ(EntriesOf(list), (Entries{{"d", 4}}));
  list.erase(list.find("d"));
  EXPECT_TRUE(list.empty());
}

TEST(ResourceList, CopiesAreIndependentValues) {
  ResourceList a{{"nvidia.com/mig-2g.20gb", 1}};
  ResourceList b = a;
  b["nvidia.com/mig-2g.20gb"] = 2;
  EXPECT_EQ(Get(a, "nvidia.com/mig-2g.20gb"), 1);
  a = b;
  EXPECT_EQ(a, b);
  ResourceList moved = std::move(b);
  EXPECT_EQ(moved, a);
  EXPECT_LT((ResourceList{{"a", 1}}), (ResourceList{{"a", 2}}));
}

}  // namespace
}  // namespace gpuadmit
