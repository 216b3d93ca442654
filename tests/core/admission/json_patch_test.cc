// JsonPatch writes what dumping the same operations as nlohmann objects wrote, byte for byte.
#include "core/admission/json_patch.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(JsonPatch, WritesWhatDumpingTheOperationObjectsWrote) {
  PatchPath limits = PatchPath() / "spec" / "containers" / 0 / "resources" / "limits";
  JsonPatch patch;
  patch.Remove(limits / "nvidia.com/mig-3g.40gb");
  patch.AddString(limits / "nvidia.com/mig-2g.20gb", "1");
  patch.Add(PatchPath() / "spec" / "tolerations",
            json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}));
  json ops = json::array();
  ops.push_back({{"op", "remove"}, {"path", (limits / "nvidia.com/mig-3g.40gb").str()}});
  ops.push_back(
      {{"op", "add"}, {"path", (limits / "nvidia.com/mig-2g.20gb").str()}, {"value", "1"}});
  ops.push_back({{"op", "add"},
                 {"path", "/spec/tolerations"},
                 {"value", json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}})}});
  EXPECT_EQ(patch.Text(), ops.dump());
  EXPECT_EQ(patch.ToJson(), ops);
  EXPECT_EQ(patch.size(), 3u);
}

TEST(JsonPatch, EscapesPathsAndStringsAsJson) {
  JsonPatch patch;
  patch.AddString(PatchPath() / "metadata" / "annotations" / "a\"b\\c/d~e", "line\nnext\x01");
  json ops = json::array({{{"op", "add"},
                           {"path", "/metadata/annotations/a\"b\\c~1d~0e"},
                           {"value", "line\nnext\x01"}}});
  EXPECT_EQ(patch.Text(), ops.dump());
}

TEST(PatchPath, EscapesEachTokenAsAJsonPointerDoes) {
  for (std::string token :
       {"", "plain", "~", "/", "~~//", "/lead", "trail~", "a~1b/c~0d", "x/y~z"}) {
    nlohmann::json::json_pointer pointer("/spec");
    EXPECT_EQ((PatchPath("/spec") / token / 7).str(), (pointer / token / 7).to_string()) << token;
  }
  EXPECT_EQ((PatchPath() / 0 / 1234567890).str(), "/0/1234567890");
}

TEST(JsonPatch, IsAnEmptyListWithNoOperations) {
  JsonPatch patch;
  EXPECT_TRUE(patch.empty());
  EXPECT_EQ(patch.Text(), "[]");
  EXPECT_EQ(patch.ToJson(), json::array());
}

TEST(JsonPatch, WritesAStringThatIsNotUtf8WithReplacementCharacters) {
  JsonPatch patch;
  patch.AddString(PatchPath() / "x", std::string("a\xff"));
  EXPECT_EQ(patch.ToJson()[0]["value"], "a\xef\xbf\xbd");
}

}  // namespace
}  // namespace gpuadmit
