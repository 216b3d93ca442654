#include "core/json/json_trie_reader.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/json/json_reader.h"
#include "core/kube/kube_objects.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// What the trie keeps of a whole DOM: the reference the simdjson reader must equal.
json Filtered(const json& full, const FieldTrie& trie) {
  if (trie.keeps_all()) return full;
  if (full.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : full.items()) {
      if (const FieldTrie* child = trie.Child(key)) out[key] = Filtered(value, *child);
    }
    return out;
  }
  if (full.is_array()) {
    json out = json::array();
    if (const FieldTrie* child = trie.Child("")) {
      for (const json& value : full) out.push_back(Filtered(value, *child));
    }
    return out;
  }
  return full;
}

TEST(ParseJsonKeeping, BuildsWhatTheTrieKeepsOfRealListsAndWatchEvents) {
  struct Case {
    const char* file;
    const FieldTrie& trie;
  };
  const Case cases[] = {
      {"tests/fixtures/watch/list-pods-chunk1-with-continue.json", PodListFields()},
      {"tests/fixtures/watch/list-pods-chunk2-final.json", PodListFields()},
      {"tests/fixtures/watch/watch-node-added-event-openshift-2017.json", NodeEventFields()},
      {"tests/fixtures/nodes/h100-80gb-hbm3-mig-mixed-node-labels.json", NodeFields()},
      {"tests/fixtures/pods/pod-kubectl-get-o-json-kind-cluster.json", PodFields()},
      {"manifests/examples/demo-cluster.json", PodListFields()},
  };
  for (const Case& c : cases) {
    std::string text = testing::ReadSourceFile(c.file);
    auto kept = ParseJsonKeeping(text, c.trie, 512);
    ASSERT_TRUE(kept.ok()) << c.file << ": " << kept.error().message;
    EXPECT_EQ(kept.value(), Filtered(json::parse(text), c.trie)) << c.file;
  }
  // Every event of the recorded pod watch stream, one JSON document a line.
  std::istringstream lines(
      testing::ReadSourceFile("tests/fixtures/watch/watch-pods-added-modified-deleted-2015.jsonl"));
  int events = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto kept = ParseJsonKeeping(line, PodEventFields(), 512);
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    EXPECT_EQ(kept.value(), Filtered(json::parse(line), PodEventFields()));
    ++events;
  }
  EXPECT_GT(events, 0);
}

TEST(ParseJsonKeeping, KeepsNumberKindsStringEscapesAndTheLastOfDuplicateKeys) {
  FieldTrie all = FieldTrie::FromPatterns({"**"});
  auto doc = ParseJsonKeeping(
      R"({"a":1,"b":-2,"c":1.5,"d":18446744073709551615,"a":3,"s":"\u00e9\n","n":null,"t":true})",
      all, 512);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc.value(), json::parse(R"({"a":3,"b":-2,"c":1.5,"d":18446744073709551615,
      "s":"\u00e9\n","n":null,"t":true})"));
  EXPECT_TRUE(doc.value()["b"].is_number_integer());
  EXPECT_TRUE(doc.value()["c"].is_number_float());
  EXPECT_EQ(ParseJsonKeeping("42", all, 512).value(), 42);
  EXPECT_EQ(ParseJsonKeeping("\"x\"", all, 512).value(), "x");
}

TEST(ParseJsonKeeping, RefusesBrokenSyntaxInvalidUtf8TrailingContentAndDeepNesting) {
  const FieldTrie& pod = PodFields();
  for (std::string_view bad :
       {R"({"metadata":{"name":"p",}})", R"({"metadata":{"name":"p"})",
        "{\"metadata\":{\"name\":\"\xff\"}}", R"({"spec":{}} {"x":1})", R"({"spec":{}} x)", ""}) {
    auto doc = ParseJsonKeeping(bad, pod, 512);
    ASSERT_FALSE(doc.ok()) << bad;
    EXPECT_EQ(doc.error().message.rfind("invalid JSON", 0), 0u) << doc.error().message;
  }
  // A \u escape of a lone surrogate would not be UTF-8 once decoded.
  FieldTrie kept = FieldTrie::FromPatterns({"**"});
  EXPECT_FALSE(ParseJsonKeeping(R"({"uid":"a\udfee"})", kept, 512).ok());
  EXPECT_FALSE(ParseJsonKeeping(R"({"\udc00":1})", kept, 512).ok());
  EXPECT_EQ(ParseJsonKeeping(R"(["\ud83d\ude00"])", kept, 512).value()[0], "\xF0\x9F\x98\x80");
  // Invalid UTF-8 is refused even inside a value the trie skips: the whole text is validated.
  EXPECT_FALSE(ParseJsonKeeping("{\"junk\":\"\xc3\x28\"}", pod, 512).ok());
  FieldTrie all = FieldTrie::FromPatterns({"**"});
  EXPECT_EQ(
      ParseJsonKeeping(std::string(600, '[') + std::string(600, ']'), all, 512).error().message,
      "JSON nests deeper than 512 levels");
  EXPECT_TRUE(ParseJsonKeeping(std::string(500, '[') + std::string(500, ']'), all, 512).ok());
}

}  // namespace
}  // namespace gpuadmit
