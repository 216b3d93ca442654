// JsonView reads an nlohmann value and simdjson's tape alike: every test reads one text both
// ways (nlohmann's parser and JsonTape) and asserts on the same answers.
#include "core/json/json_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// One text, parsed both ways; views() holds a view of each.
class BothWays {
 public:
  explicit BothWays(const std::string& text)
      : dom_(json::parse(text)), tape_(JsonTape::Parse(text, 64)) {
    EXPECT_NE(tape_, nullptr) << text;
  }
  std::vector<JsonView> views() const {
    return {JsonView(dom_), tape_ == nullptr ? JsonView() : tape_->root()};
  }

 private:
  json dom_;
  std::unique_ptr<const JsonTape> tape_;
};

// "key=value" for each member, as a reader would list them.
std::vector<std::string> Listed(JsonView object) {
  std::vector<std::string> out;
  for (const auto& [key, value] : object.Members())
    out.push_back(std::string(key) + "=" + value.Dump());
  return out;
}

TEST(JsonView, ReadsKeysIndexesAndScalarsAlikeOnBoth) {
  BothWays doc(R"({"spec":{"containers":[{"name":"a","args":["--tp","4"]},7],
                  "priority":-3,"big":18446744073709551615,"ratio":1.5,"on":true,"none":null}})");
  for (JsonView root : doc.views()) {
    JsonView spec = root["spec"];
    EXPECT_TRUE(spec.is_object());
    EXPECT_EQ(spec["containers"].size(), 2u);
    EXPECT_EQ(spec["containers"][0]["name"].string(), "a");
    EXPECT_EQ(spec.At({"containers"})[0]["args"][1].string(), "4");
    EXPECT_TRUE(spec["containers"][1].is_number_integer());
    EXPECT_EQ(spec["containers"][1].integer(), 7);
    EXPECT_EQ(spec["priority"].integer(), -3);
    EXPECT_EQ(spec["big"].integer(), -1);  // wraps, as nlohmann's get<int64_t>
    EXPECT_TRUE(spec["ratio"].is_number());
    EXPECT_FALSE(spec["ratio"].is_number_integer());
    EXPECT_EQ(spec["ratio"].Dump(), "1.5");
    EXPECT_EQ(spec["big"].Dump(), "18446744073709551615");
    EXPECT_TRUE(spec["on"].boolean());
    EXPECT_TRUE(spec["none"].present());
    EXPECT_TRUE(spec["none"].is_null());
    std::vector<std::string> names;
    for (JsonView c : spec["containers"].Elements()) names.push_back(c["name"].Dump());
    EXPECT_EQ(names, (std::vector<std::string>{"\"a\"", "null"}));
  }
}

TEST(JsonView, ReadsWhatIsNotThereAsAbsentAllTheWayDown) {
  BothWays doc(R"({"a":"text","list":[1]})");
  for (JsonView root : doc.views()) {
    EXPECT_FALSE(root["missing"].present());
    EXPECT_TRUE(root["missing"].is_null());
    EXPECT_FALSE(root.At({"a", "b", "c"}).present());  // through a string
    EXPECT_FALSE(root["list"][1].present());           // past the end
    EXPECT_FALSE(root["list"]["key"].present());       // a key of an array
    EXPECT_FALSE(root["a"][0].present());              // an index of a string
    EXPECT_EQ(root["list"].string(), "");
    EXPECT_EQ(root["a"].integer(), 0);
    EXPECT_EQ(root["a"].size(), 0u);
    EXPECT_TRUE(root["a"].Members().empty());
    EXPECT_EQ(root["a"].Elements().begin(), root["a"].Elements().end());
    EXPECT_EQ(root["missing"].ToJson(), json());
  }
  EXPECT_FALSE(JsonView(static_cast<const json*>(nullptr)).present());
}

TEST(JsonView, ReadsTheLastOfADuplicateKeyAndListsMembersInKeyOrderOnBoth) {
  BothWays doc(R"({"m":{"zeta":"1","alpha":"x","zeta":"2","mid":{"k":"a","k":"b"}}})");
  for (JsonView root : doc.views()) {
    JsonView m = root["m"];
    EXPECT_EQ(m["zeta"].string(), "2");
    EXPECT_EQ(m["mid"]["k"].string(), "b");
    EXPECT_EQ(Listed(m),
              (std::vector<std::string>{"alpha=\"x\"", "mid={\"k\":\"b\"}", "zeta=\"2\""}));
    EXPECT_EQ(m.ToJson(), json::parse(R"({"alpha":"x","mid":{"k":"b"},"zeta":"2"})"));
  }
}

// Over 32 keys the tape's members are ordered by another sort: the same order and the same
// last-of-a-duplicate as nlohmann's map.
TEST(JsonView, ListsTheMembersOfALargeObjectAsNlohmannDoes) {
  std::string text = "{";
  for (int i = 40; i-- > 0;)
    text += "\"k" + std::to_string(i % 37) + "\":" + std::to_string(i) + ",";
  text.back() = '}';
  BothWays doc(text);
  std::vector<std::vector<std::string>> listed;
  for (JsonView root : doc.views()) listed.push_back(Listed(root));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].size(), 37u);
  EXPECT_EQ(listed[0].front(), "k0=0");  // k0 is written for i = 37 and i = 0: the last wins
  EXPECT_EQ(listed[1], listed[0]);
}

TEST(JsonView, ReadsSeveralFieldsInOnePassAsOperatorIndexReadsEach) {
  BothWays doc(R"({"uid":"1","kind":{"kind":"Pod"},"uid":"2","name":7})");
  for (JsonView root : doc.views()) {
    auto [uid, kind, missing, name] = root.Fields({"uid", "kind", "missing", "name"});
    EXPECT_EQ(uid.string(), "2");
    EXPECT_EQ(kind["kind"].string(), "Pod");
    EXPECT_FALSE(missing.present());
    EXPECT_EQ(name.integer(), 7);
    auto [none] = root["name"].Fields({"uid"});
    EXPECT_FALSE(none.present());
  }
}

// Fields compares a member's key only with the keys asked for whose length is the same modulo
// 16: keys 16 apart in length share a slot and are still told apart, and a call that asks for
// more than 32 keys reads them all too.
TEST(JsonView, ReadsFieldsWhoseLengthsShareASlotAndManyFieldsAtOnce) {
  BothWays doc(R"({"b":1,"a":2,"aaaaaaaaaaaaaaaaa":3,"bbbbbbbbbbbbbbbbb":4,"a":5,"":6,
                  "cccccccccccccccc":7})");
  for (JsonView root : doc.views()) {
    auto [a, long_b, empty, sixteen, c] =
        root.Fields({"a", "bbbbbbbbbbbbbbbbb", "", "cccccccccccccccc", "c"});
    EXPECT_EQ(a.integer(), 5);  // a duplicate: the last
    EXPECT_EQ(long_b.integer(), 4);
    EXPECT_EQ(empty.integer(), 6);
    EXPECT_EQ(sixteen.integer(), 7);
    EXPECT_FALSE(c.present());
  }
  std::string text = "{";
  for (int i = 0; i < 40; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  text.back() = '}';
  BothWays many(text);
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("k" + std::to_string(39 - i));
  std::string_view keys[41];
  std::copy(names.begin(), names.end(), keys);
  keys[40] = "none";
  for (JsonView root : many.views()) {
    const auto values = root.Fields(keys);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(values[i].integer(), 39 - i) << names[i];
    EXPECT_FALSE(values[40].present());
  }
}

// The tape's key scans step over each value by its shape: one word for a string, a literal or
// null, two for a number, an object or array to past its end (nested, empty or not). A key is
// found after every shape, among keys of its length, and an escaped key by its unescaped text.
TEST(JsonView, FindsKeysAfterValuesOfEveryShape) {
  BothWays doc(R"({"s":"x","i":-1,"u":18446744073709551615,"d":2.5,"t":true,"f":false,"n":null,
                  "o":{"in":{"deep":[1,{"k":"v"}]}},"a":[[],{},[1,2.5]],"e":{},"z":[],
                  "q\"k":"quoted","":"empty","sx":"after","k":"v2","last":7})");
  for (JsonView root : doc.views()) {
    EXPECT_EQ(root["last"].integer(), 7);
    EXPECT_EQ(root["sx"].string(), "after");
    EXPECT_EQ(root["q\"k"].string(), "quoted");
    EXPECT_EQ(root[""].string(), "empty");
    EXPECT_EQ(root["k"].string(), "v2");  // not the "k" nested in "o"
    EXPECT_EQ(root["o"]["in"]["deep"][1]["k"].string(), "v");
    EXPECT_EQ(root["a"][2][1].Dump(), "2.5");
    EXPECT_TRUE(root["e"].is_object());
    EXPECT_FALSE(root["missing"].present());
    EXPECT_FALSE(root["l"].present());  // the length of a key there, and no such key
    auto [u, d, n, last, none] = root.Fields({"u", "d", "n", "last", "o2"});
    EXPECT_EQ(u.Dump(), "18446744073709551615");
    EXPECT_EQ(d.Dump(), "2.5");
    EXPECT_TRUE(n.present() && n.is_null());
    EXPECT_EQ(last.integer(), 7);
    EXPECT_FALSE(none.present());
    EXPECT_EQ(root.Members().size(), 16u);
    EXPECT_EQ(root["o"]["in"].Members().size(), 1u);
  }
}

TEST(JsonView, FollowsAPointerThroughObjectsAndArraysWithEscapes) {
  BothWays doc(R"({"spec":{"template":{"spec":{"a/b":{"c~d":[10,{"e":"found"}]}}}}})");
  for (JsonView root : doc.views()) {
    EXPECT_EQ(root.AtPointer("/spec/template/spec/a~1b/c~0d/1/e").string(), "found");
    EXPECT_EQ(root.AtPointer("/spec/template/spec/a~1b/c~0d/0").integer(), 10);
    EXPECT_FALSE(root.AtPointer("/spec/template/spec/a~1b/c~0d/2").present());
    EXPECT_FALSE(root.AtPointer("/spec/template/spec/a~1b/c~0d/01").present());
    EXPECT_FALSE(root.AtPointer("/spec/nothing").present());
    EXPECT_TRUE(root.AtPointer("").is_object());
    EXPECT_FALSE(root.AtPointer("spec").present());  // not a pointer: no leading "/"
  }
}

TEST(IsJsonPointer, AcceptsRfc6901TextAndNothingElse) {
  EXPECT_TRUE(IsJsonPointer(""));
  EXPECT_TRUE(IsJsonPointer("/"));
  EXPECT_TRUE(IsJsonPointer("/spec/template/spec"));
  EXPECT_TRUE(IsJsonPointer("/a~1b/c~0d/~0~1"));
  EXPECT_FALSE(IsJsonPointer("spec"));   // no leading "/"
  EXPECT_FALSE(IsJsonPointer("/a~2b"));  // "~" escapes only 0 and 1
  EXPECT_FALSE(IsJsonPointer("/a~"));    // nor ends a token
  EXPECT_FALSE(IsJsonPointer("/ok/~x/y"));
  // The same verdicts as nlohmann's parser, which the check replaces on the request path.
  for (std::string_view text : {"", "/", "/a~1b/c~0d", "spec", "/a~2b", "/a~", "/x/~"}) {
    bool parses = true;
    try {
      nlohmann::json::json_pointer pointer{std::string(text)};
      EXPECT_EQ(pointer.to_string(), text);  // a valid pointer's text is its own normal form
    } catch (const nlohmann::json::exception&) {
      parses = false;
    }
    EXPECT_EQ(IsJsonPointer(text), parses) << text;
  }
}

TEST(JsonTape, RefusesWhatSimdjsonCannotHold) {
  EXPECT_EQ(JsonTape::Parse("{\"a\":", 64), nullptr);
  EXPECT_EQ(JsonTape::Parse(R"({"a":18446744073709551616})", 64), nullptr);
  EXPECT_EQ(JsonTape::Parse(std::string(65, '[') + std::string(65, ']'), 64), nullptr);
  EXPECT_NE(JsonTape::Parse(std::string(63, '[') + std::string(63, ']'), 64), nullptr);
}

TEST(JsonTape, OutlivesItsText) {
  std::unique_ptr<const JsonTape> first;
  {
    std::string text = R"({"name":"first"})";
    first = JsonTape::Parse(text, 64);
  }
  auto second = JsonTape::Parse(R"({"name":"second"})", 64);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->root()["name"].string(), "first");
  EXPECT_EQ(second->root()["name"].string(), "second");
}

TEST(JsonTape, MayBeDestroyedOnAnotherThread) {
  auto tape = JsonTape::Parse(R"({"name":"moved"})", 64);
  ASSERT_NE(tape, nullptr);
  std::thread([&tape] {
    EXPECT_EQ(tape->root()["name"].string(), "moved");
    tape.reset();
    auto next = JsonTape::Parse(R"({"name":"next"})", 64);
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(next->root()["name"].string(), "next");
  }).join();
  EXPECT_EQ(tape, nullptr);
}

}  // namespace
}  // namespace gpuadmit
