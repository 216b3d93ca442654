#include "core/json/yaml_json.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(YamlToJson, PlainScalarsFollowTheCoreSchemaAndQuotedOnesStayStrings) {
  auto doc = YamlToJson(R"(
a: 1
b: "1"
c: true
d: 'false'
e: ~
f: 1.5
g: 1Gi
h: [x, 2]
i: {j: null}
k: 99999999999999999999999
)");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc.value(), json::parse(R"({"a":1,"b":"1","c":true,"d":"false","e":null,"f":1.5,
      "g":"1Gi","h":["x",2],"i":{"j":null},"k":"99999999999999999999999"})"));
}

TEST(YamlToJson, SyntaxErrorsSayLineAndColumn) {
  auto doc = YamlToJson("a: [1, 2\nb: c");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message.substr(0, 4), "2:2:");
}

}  // namespace
}  // namespace gpuadmit
