// The status page's model, HTML and JSON over a handler that reviewed real pods.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/fakes/test_cluster.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/status/html.h"
#include "webhook/status/status_json.h"
#include "webhook/status/status_model.h"
#include "webhook/status/status_page.h"
#include "webhook/status/status_routes.h"
#include "webhook/status/svg_chart.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

TEST(Html, EscapesTheFiveCharactersThatEndTextOrAttributes) {
  EXPECT_EQ(Html("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  std::string q;
  AppendQueryValue(q, "a b&c=d/é");
  EXPECT_EQ(q, "a%20b%26c%3Dd%2F%C3%A9");
}

TEST(ParseStatusQuery, ReadsFilterPageAndPerPageAndRefusesBadNumbers) {
  auto q = ParseStatusQuery("node=gpu%2Da+x&page=3&per_page=50&other=1");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value().node, "gpu-a x");
  EXPECT_EQ(q.value().page, 3u);
  EXPECT_EQ(q.value().per_page, 50u);
  EXPECT_EQ(ParseStatusQuery("").value().per_page, 20u);
  EXPECT_EQ(ParseStatusQuery("page=0").error().message,
            "page must be a number from 1 to 1000000, not \"0\"");
  EXPECT_EQ(ParseStatusQuery("per_page=101").error().message,
            "per_page must be a number from 1 to 100, not \"101\"");
  EXPECT_FALSE(ParseStatusQuery("node=%zz").ok());
  EXPECT_FALSE(ParseStatusQuery("node=%4").ok());
}

TEST(SvgChart, SparklineScalesPointsIntoItsBoxAndEscapesItsTitle) {
  std::vector<ChartPoint> points = {{0, 0}, {10, 50}, {20, 100}};
  std::string svg = Sparkline(points, 0, 100, "<b>util</b>", 120, 24);
  EXPECT_NE(svg.find("<title>&lt;b&gt;util&lt;/b&gt;</title>"), std::string::npos);
  // x from 2 to 118, y from 22 (0) to 2 (100).
  EXPECT_NE(svg.find("points=\"2.0,22.0 60.0,12.0 118.0,2.0\""), std::string::npos) << svg;
  EXPECT_NE(Sparkline({}, 0, 100, "t").find("</svg>"), std::string::npos);
  std::vector<ChartPoint> one = {{5, 150}};  // clamped to the top
  EXPECT_NE(Sparkline(one, 0, 100, "t", 120, 24).find("cy=\"2.0\""), std::string::npos);
}

TEST(SvgChart, StackedBarSplitsItsWidthInProportion) {
  std::vector<BarSegment> segments = {
      {"used", 3, "#d00"}, {"free", 1, "#0d0"}, {"none", 0, "#000"}};
  std::string svg = StackedBar(segments, "bar", 200, 10);
  EXPECT_NE(svg.find("<rect x=\"0.0\" width=\"150.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<rect x=\"150.0\" width=\"50.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>used: 3</title>"), std::string::npos);
  EXPECT_EQ(svg.find("none"), std::string::npos);
}

// A handler over twelve T4 nodes with metrics on one, after reviews of two pods, one of them
// named to break out of the page.
class StatusTest : public ::testing::Test {
 protected:
  StatusTest()
      : log_(LogLevel::kError),
        handler_(log_, metrics_),
        publisher_(handler_, metrics_, nullptr, {}) {
    std::vector<json> items;
    for (int i = 0; i < 12; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "t4-%02d", i);
      items.push_back(testing::GpuNode(name, 2));
    }
    items.push_back(testing::GpuNode("a100-00", 8, "NVIDIA-A100-SXM4-40GB"));
    handler_.SetPolicy(std::make_shared<const Policy>());
    publisher_.Publish(
        std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::ListOf(items))));
    GpuMetricsHistory history;
    MetricsTime t0{};
    for (int k = 0; k < 3; ++k) {
      history.Add(GpuReadingFromExposition(testing::DcgmGpu("t4-03", 0, 10.0 * (k + 1), 100, 900)),
                  t0 + std::chrono::seconds(15 * k));
    }
    handler_.SetGpuMetrics(std::make_shared<const ClusterGpuMetrics>(history.Publish()));
    metrics_.SetCertificateExpiry(1'800'000'000);
    Review("ok-pod", "uid-1");
    Review("<script>document.title='owned'</script>", "uid-2");
  }

  void Review(const std::string& name, const std::string& uid) {
    json review = testing::GpuPodReview(name, uid);
    json& resources = review["request"]["object"]["spec"]["containers"][0]["resources"];
    resources = {{"limits", {{"nvidia.com/gpu", "1"}}}, {"requests", {{"nvidia.com/gpu", "1"}}}};
    ASSERT_EQ(handler_.Handle("application/json", review.dump()).status, 200);
  }

  StatusSources Sources() {
    return {.handler = handler_,
            .metrics = metrics_,
            .publisher = &publisher_,
            .inventory_source = "cluster file <test>",
            .policy_path = [] { return std::string("policy.yaml"); },
            .policy_text = [] { return std::string("failureMode: open # <b>\n"); },
            .policy_loaded_unix_ms = [] { return int64_t{1'790'000'000'000}; },
            .build = {{"version", "9.9.9"}}};
  }

  Logger log_;
  Metrics metrics_;
  AdmissionHandler handler_;
  SnapshotPublisher publisher_;
};

TEST_F(StatusTest, ModelHasTheOverviewAndThePageOfNodesTheQueryAsksFor) {
  StatusSources sources = Sources();
  int64_t now = handler_.snapshot_at_unix_ms() + 5000;
  StatusModel m = CollectStatus(sources, {.node = "t4-", .page = 2, .per_page = 5}, now);
  EXPECT_EQ(m.node_count, 13u);
  EXPECT_EQ(m.matching_nodes, 12u);
  EXPECT_EQ(m.pages, 3u);
  ASSERT_EQ(m.nodes.size(), 5u);
  EXPECT_EQ(m.nodes.front().name, "t4-05");
  EXPECT_EQ(m.nodes.back().name, "t4-09");
  EXPECT_EQ((CollectStatus(sources, {.node = "t4-", .page = 3, .per_page = 5}, now).nodes.size()),
            2u);
  EXPECT_TRUE(CollectStatus(sources, {.page = 9}, now).nodes.empty());
  // By product too.
  EXPECT_EQ(CollectStatus(sources, {.node = "A100"}, now).matching_nodes, 1u);

  EXPECT_EQ(m.gpus_by_product, (std::vector<std::pair<std::string, int64_t>>{
                                   {"NVIDIA-A100-SXM4-40GB", 8}, {"Tesla-T4", 24}}));
  ASSERT_FALSE(m.resources.empty());
  EXPECT_EQ(m.resources[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(m.resources[0].allocatable, 32);
  EXPECT_EQ(m.last_15_minutes[static_cast<size_t>(ReviewOutcome::kPatched)], 2u);
  ASSERT_EQ(m.recent.size(), 2u);
  EXPECT_EQ(m.recent[0].uid, "uid-2");  // newest first
  EXPECT_EQ(m.recent[1].asked, "nvidia.com/gpu=1");
  EXPECT_EQ(m.certificate_expiry_unix, 1'800'000'000);
  EXPECT_EQ(m.policy_digest.size(), 12u);
  EXPECT_EQ(m.inventory_at_unix_ms, handler_.snapshot_at_unix_ms());
}

TEST_F(StatusTest, NodesOnThePageCarryTheirDevicesWindows) {
  StatusModel m = CollectStatus(Sources(), {.node = "t4-03"}, 0);
  ASSERT_EQ(m.nodes.size(), 1u);
  const NodeView& n = m.nodes[0];
  EXPECT_EQ(n.gpus, 2);
  ASSERT_EQ(n.devices.size(), 1u);
  EXPECT_EQ(n.devices[0].utilization_percent,
            (WindowStats{.min = 10, .max = 30, .mean = 20, .count = 3}));
  ASSERT_NE(n.devices[0].window, nullptr);
  EXPECT_EQ(n.devices[0].window->size(), 3u);
}

TEST_F(StatusTest, PageEscapesEveryNameAndHasEachSection) {
  StatusModel m = CollectStatus(Sources(), {.node = "t4-03"}, 0);
  std::string html = RenderStatusPage(m);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;document.title=&#39;owned&#39;&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("cluster file &lt;test&gt;"), std::string::npos);
  EXPECT_NE(html.find("failureMode: open # &lt;b&gt;"), std::string::npos);
  for (std::string_view id : {"overview", "resources", "nodes", "decisions", "queue", "policy"}) {
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(html.find("data-node=\"t4-03\""), std::string::npos);
  EXPECT_NE(html.find("min 10.0 / mean 20.0 / max 30.0 %"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);  // the CSP refuses inline styles
}

TEST_F(StatusTest, TheCapacityQueueListsTheGatedPodsInQueueOrder) {
  StatusModel off = CollectStatus(Sources(), {}, 0);
  EXPECT_FALSE(off.queue_enabled);
  EXPECT_NE(RenderStatusPage(off).find("Off in the policy (queue.enabled)."), std::string::npos);

  // Three pods held by the gate (one of higher priority, so first), one by another gate.
  auto gated = [](const std::string& name, const std::string& gate, int gpus, int priority,
                  const std::string& created) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "ml"}, {"creationTimestamp", created}}},
                {"spec",
                 {{"priority", priority},
                  {"schedulingGates", json::array({{{"name", gate}}})},
                  {"containers", json::array()}}},
                {"status", {{"phase", "Pending"}}}};
    json container = {{"name", "c"}};
    container["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
    pod["spec"]["containers"].push_back(container);
    return pod;
  };
  std::vector<json> items = {
      testing::GpuNode("t4-00", 2),
      gated("early", "gpuadmit.io/capacity", 2, 0, "2026-11-26T08:00:00Z"),
      gated("<b>late</b>", "gpuadmit.io/capacity", 1, 0, "2026-11-26T08:00:05Z"),
      gated("urgent", "gpuadmit.io/capacity", 8, 100, "2026-11-26T08:00:09Z"),
      gated("other", "example.com/gate", 1, 0, "2026-11-26T08:00:01Z")};
  handler_.SetSnapshot(
      std::make_shared<const InventorySnapshot>(testing::SnapshotOf(testing::ListOf(items))));
  Policy policy;
  policy.queue.enabled = true;
  handler_.SetPolicy(std::make_shared<const Policy>(policy));
  StatusModel m = CollectStatus(Sources(), {}, 0);
  EXPECT_TRUE(m.queue_enabled);
  EXPECT_EQ(m.queue_waiting, 3u);
  ASSERT_EQ(m.queue.size(), 3u);
  EXPECT_EQ(m.queue[0].pod, "ml/urgent");
  EXPECT_EQ(m.queue[0].asks, "nvidia.com/gpu=8");
  EXPECT_EQ(m.queue[0].priority, 100);
  EXPECT_EQ(m.queue[1].pod, "ml/early");
  EXPECT_EQ(m.queue[2].pod, "ml/<b>late</b>");
  std::string html = RenderStatusPage(m);
  EXPECT_NE(html.find("3 pods waiting behind the capacity gate"), std::string::npos);
  EXPECT_NE(html.find("ml/&lt;b&gt;late&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>late"), std::string::npos);
  json j = json::parse(RenderStatusJson(m));
  EXPECT_EQ(j["queue"]["enabled"], true);
  EXPECT_EQ(j["queue"]["waiting"], 3);
  EXPECT_EQ(j["queue"]["pods"][0]["pod"], "ml/urgent");
  EXPECT_EQ(j["queue"]["pods"][1]["created"], "2026-11-26T08:00:00Z");
}

TEST_F(StatusTest, JsonSaysWhatThePageSays) {
  StatusModel m = CollectStatus(Sources(), {.node = "t4-03"}, handler_.snapshot_at_unix_ms());
  json j = json::parse(RenderStatusJson(m));
  EXPECT_EQ(j["inventory"]["nodes"], 13);
  EXPECT_EQ(j["inventory"]["ageSeconds"], 0.0);
  EXPECT_EQ(j["nodes"]["matching"], 1);
  EXPECT_EQ(j["nodes"]["items"][0]["name"], "t4-03");
  const json& device = j["nodes"]["items"][0]["devices"][0];
  EXPECT_EQ(device["utilizationPercent"]["mean"], 20.0);
  ASSERT_EQ(device["window"].size(), 3u);
  EXPECT_EQ(device["window"][0]["secondsBeforeLatest"], 30.0);
  EXPECT_EQ(device["window"][2]["utilizationPercent"], 30.0);
  EXPECT_EQ(j["decisions"]["recent"][0]["object"],
            "Pod default/<script>document.title='owned'</script>");
  EXPECT_EQ(j["decisions"]["last15Minutes"]["patched"], 2);
  EXPECT_EQ(j["policy"]["text"], "failureMode: open # <b>\n");
  EXPECT_EQ(j["build"]["version"], "9.9.9");
}

TEST(StatusDra, NodesSayWhichResourcesTheirDraDevicesMakeAndTheirPools) {
  Logger log(LogLevel::kError);
  Metrics metrics;
  AdmissionHandler handler(log, metrics);
  SnapshotPublisher publisher(handler, metrics, nullptr, {});
  handler.SetPolicy(std::make_shared<const Policy>());
  publisher.Publish(std::make_shared<const InventorySnapshot>(
      testing::SnapshotOf(testing::ReadJsonFile("tests/fixtures/dra/seed-cluster.json"))));
  StatusSources sources{.handler = handler, .metrics = metrics, .publisher = &publisher};
  StatusModel m = CollectStatus(sources, {.node = "h200-medium"}, 0);
  ASSERT_EQ(m.nodes.size(), 1u);
  EXPECT_EQ(m.nodes[0].dra_pools, std::vector<std::string>{"gpu.nvidia.com/h200-medium"});
  json node = json::parse(RenderStatusJson(m))["nodes"]["items"][0];
  EXPECT_EQ(node["draPools"], json::array({"gpu.nvidia.com/h200-medium"}));
  json two_g;
  for (const json& r : node["resources"]) {
    if (r["resource"] == "nvidia.com/mig-2g.20gb") two_g = r;
  }
  EXPECT_EQ(two_g["source"], "dra");
  EXPECT_EQ(two_g["allocatable"], 12);
  EXPECT_EQ(two_g["used"], 1);  // the fixture's claim ml/held
  std::string page = RenderStatusPage(m);
  EXPECT_NE(page.find("DRA pools gpu.nvidia.com/h200-medium"), std::string::npos);
  EXPECT_NE(page.find("nvidia.com/mig-2g.20gb (DRA)"), std::string::npos);
}

TEST_F(StatusTest, RoutesAnswerThePageWithItsPolicyHeaderAndABadQueryWith400) {
  StatusSources sources = Sources();
  auto page = AnswerStatus("/status", "per_page=5", sources, 0);
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->extra_headers.find("Content-Security-Policy: default-src 'self'\r\n"),
            std::string_view::npos);
  EXPECT_EQ(AnswerStatus("/status.json", "", sources, 0)->content_type, "application/json");
  EXPECT_EQ(AnswerStatus("/status.css", "", sources, 0)->content_type, "text/css; charset=utf-8");
  auto bad = AnswerStatus("/status", "page=x", sources, 0);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"], "page must be a number from 1 to 1000000, not \"x\"");
  EXPECT_FALSE(AnswerStatus("/statusx", "", sources, 0).has_value());
}

}  // namespace
}  // namespace gpuadmit
