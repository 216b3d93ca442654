#include "core/inventory/prometheus_samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpuadmit {
namespace {

TEST(ParseExposition, ReadsNameLabelsValueAndOptionalTimestamp) {
  ExpositionSamples parsed = ParseExposition(
      "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
      "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",Hostname=\"node-a\"} 4845\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 409.692000 1795271098000\n"
      "up 1\n");
  EXPECT_EQ(parsed.skipped_lines, 0u);
  EXPECT_EQ(parsed.first_skipped_line, 0u);
  EXPECT_EQ(parsed.samples,
            (std::vector<PromSample>{
                {"DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"Hostname", "node-a"}}, 4845, {}},
                {"DCGM_FI_DEV_POWER_USAGE", {{"gpu", "1"}}, 409.692, 1795271098000},
                {"up", {}, 1, {}},
            }));
}

TEST(ParseExposition, UnescapesQuotesBackslashesAndNewlinesInLabelValues) {
  ExpositionSamples parsed =
      ParseExposition(R"(m{a="say \"hi\"",b="C:\\dir",c="two\nlines",d="keep \t as is",} 1)");
  ASSERT_EQ(parsed.samples.size(), 1u);
  EXPECT_EQ(
      parsed.samples[0].labels,
      (std::vector<PromLabel>{
          {"a", "say \"hi\""}, {"b", "C:\\dir"}, {"c", "two\nlines"}, {"d", "keep \\t as is"}}));
  EXPECT_EQ(parsed.samples[0].Label("c"), "two\nlines");
  EXPECT_EQ(parsed.samples[0].Label("absent"), "");
}

TEST(ParseExposition, AcceptsBlanksAroundTokensCrlfAndOpenMetricsEof) {
  ExpositionSamples parsed = ParseExposition("  m { a = \"1\" , b=\"2\" }   7  \r\n\r\n# EOF\r\n");
  EXPECT_EQ(parsed.skipped_lines, 0u);
  EXPECT_EQ(parsed.samples, (std::vector<PromSample>{{"m", {{"a", "1"}, {"b", "2"}}, 7, {}}}));
}

TEST(ParseExposition, ReadsNanAndInfinitiesAsPrometheusWritesThem) {
  ExpositionSamples parsed = ParseExposition("a NaN\nb +Inf\nc -Inf\nd 1e3\ne -0.5\n");
  ASSERT_EQ(parsed.samples.size(), 5u);
  EXPECT_TRUE(std::isnan(parsed.samples[0].value));
  EXPECT_EQ(parsed.samples[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(parsed.samples[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parsed.samples[3].value, 1000.0);
  EXPECT_EQ(parsed.samples[4].value, -0.5);
}

TEST(ParseExposition, SkipsAndCountsLinesThatAreNotSamples) {
  ExpositionSamples parsed = ParseExposition(
      "4 Active Workloads\n"  // a publisher's title: starts with a digit
      "\n"
      "----------------\n"       // a separator
      "Idle 1g.5gb allocated\n"  // reads like name + value, but the value is no number
      "m{a=\"unterminated} 1\n"  // label value never closed
      "m{a=\"1\"} 1 2 3\n"       // trailing garbage
      "m{a=\"1\"} 5\n");
  EXPECT_EQ(parsed.skipped_lines, 5u);
  EXPECT_EQ(parsed.first_skipped_line, 1u);
  EXPECT_EQ(parsed.samples, (std::vector<PromSample>{{"m", {{"a", "1"}}, 5, {}}}));
}

// The answer Prometheus 2.42 (Debian 12) gave to `query=DCGM_FI_DEV_GPU_UTIL` over a backfilled
// sample, and the same shape after `max by (...)`, which drops __name__.
TEST(ParseInstantQueryAnswer, ReadsAVectorAnswer) {
  auto answer = ParseInstantQueryAnswer(
      R"({"status":"success","data":{"resultType":"vector","result":[)"
      R"({"metric":{"Hostname":"a","__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},)"
      R"("value":[1795271159.511,"7"]},)"
      R"({"metric":{"gpu":"1"},"value":[1795271159.511,"NaN"]}]}})");
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  ASSERT_EQ(answer.value().size(), 2u);
  EXPECT_EQ(
      answer.value()[0],
      (PromSample{"DCGM_FI_DEV_GPU_UTIL", {{"Hostname", "a"}, {"gpu", "0"}}, 7, 1795271159511}));
  EXPECT_EQ(answer.value()[1].name, "");
  EXPECT_TRUE(std::isnan(answer.value()[1].value));
}

TEST(ParseInstantQueryAnswer, EmptyResultIsNoSamplesNotAnError) {
  auto answer =
      ParseInstantQueryAnswer(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer.value().empty());
}

TEST(ParseInstantQueryAnswer, ErrorStatusCarriesPrometheusReason) {
  auto answer = ParseInstantQueryAnswer(
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected"})");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message,
            "prometheus query answer: status error: bad_data: 1:5: parse error: unexpected");
}

TEST(ParseInstantQueryAnswer, RejectsShapesTheInstantVectorApiDoesNotProduce) {
  const char* bodies[] = {
      "not json",
      "[]",
      R"({"status":"success"})",
      R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
      R"({"status":"success","data":{"resultType":"vector","result":{}}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}})",
  };
  for (const char* body : bodies) {
    auto answer = ParseInstantQueryAnswer(body);
    EXPECT_FALSE(answer.ok()) << body;
  }
  EXPECT_EQ(ParseInstantQueryAnswer("not json").error().message,
            "prometheus query answer: invalid JSON: Problem while parsing an atom starting with the "
            "letter 'n'");
}

}  // namespace
}  // namespace gpuadmit
