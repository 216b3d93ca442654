#include "core/mutations.h"

#include <gtest/gtest.h>

namespace gpuadmit {
namespace {

using nlohmann::json;

Decision Fallback() {
  Decision d;
  d.swaps.push_back({"nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"});
  d.annotations.emplace_back("gpuadmit.io/fallback", "2g.20gb->1g.10gb");
  return d;
}

PodSpecLocation Template() {
  return {json::json_pointer("/spec/template/spec"), json::json_pointer("/spec/template/metadata"),
          false};
}

json Deployment(json template_metadata) {
  json d = {{"spec",
             {{"template",
               {{"spec",
                 {{"containers",
                   {{{"name", "a"},
                     {"resources", {{"limits", {{"nvidia.com/mig-2g.20gb", "1"}}}}}}}}}}}}}}};
  if (!template_metadata.is_null()) d["spec"]["template"]["metadata"] = template_metadata;
  return d;
}

json PatchFor(const json& object) {
  json ops = json::array();
  AppendPatch(object, Template(), Fallback(), ops);
  return ops;
}

TEST(AppendPatch, CreatesTheMetadataOfATemplateThatHasNone) {
  json ops = PatchFor(Deployment(nullptr));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/template/metadata",
      "value":{"annotations":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}}})"));
  EXPECT_EQ(Deployment(nullptr).patch(ops)["spec"]["template"]["metadata"]["annotations"],
            json({{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}));
}

TEST(AppendPatch, CreatesTheAnnotationsMapWhenMetadataHasNone) {
  json ops = PatchFor(Deployment({{"labels", {{"app", "x"}}}}));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add","path":"/spec/template/metadata/annotations",
      "value":{"gpuadmit.io/fallback":"2g.20gb->1g.10gb"}})"));
}

TEST(AppendPatch, AddsOneEscapedKeyToAnExistingMapAndNothingWhenItIsAlreadyThere) {
  json ops = PatchFor(Deployment({{"annotations", {{"team", "ml"}}}}));
  EXPECT_EQ(ops.back(), json::parse(R"({"op":"add",
      "path":"/spec/template/metadata/annotations/gpuadmit.io~1fallback","value":"2g.20gb->1g.10gb"})"));
  json same =
      PatchFor(Deployment({{"annotations", {{"gpuadmit.io/fallback", "2g.20gb->1g.10gb"}}}}));
  EXPECT_EQ(same.size(), 2u);  // the resource swap only
  json stale = PatchFor(Deployment({{"annotations", {{"gpuadmit.io/fallback", "old"}}}}));
  EXPECT_EQ(stale.back()["value"], "2g.20gb->1g.10gb");
}

TEST(AppendPatch, AContainerAskingForBothProfilesNowAsksForTheirSum) {
  json d = Deployment(nullptr);
  d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] =
      "2";
  json patched = d.patch(PatchFor(d));
  EXPECT_EQ(patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
            json({{"nvidia.com/mig-1g.10gb", "3"}}));
}

}  // namespace
}  // namespace gpuadmit
