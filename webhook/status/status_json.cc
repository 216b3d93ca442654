#include "webhook/status/status_json.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "webhook/status/status_page.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

json Resource(const ResourceView& r) {
  json j = {{"resource", r.resource}, {"allocatable", r.allocatable}, {"used", r.used},
            {"queued", r.queued},     {"reserved", r.reserved},       {"free", r.free}};
  if (r.stranded_slices >= 0) j["strandedSlices"] = r.stranded_slices;
  return j;
}

json Stats(const std::optional<WindowStats>& s) {
  if (!s) return nullptr;
  return {{"min", s->min}, {"mean", s->mean}, {"max", s->max}, {"count", s->count}};
}

json Optional(const std::optional<float>& v) { return v ? json(*v) : json(nullptr); }

json Device(const GpuMetrics& d) {
  json j = {{"gpu", d.latest.gpu},
            {"uuid", d.latest.uuid},
            {"model", d.latest.model_name},
            {"utilizationPercent", Stats(d.utilization_percent)},
            {"framebufferUsedMiB", Stats(d.fb_used_mib)},
            {"temperatureCelsius", Stats(d.temperature_c)},
            {"powerWatts", Stats(d.power_w)}};
  if (d.latest.IsMigInstance()) {
    j["migInstance"] = d.latest.mig_instance;
    j["migProfile"] = d.latest.mig_profile;
  }
  json window = json::array();
  if (d.window != nullptr && !d.window->empty()) {
    for (const WindowPoint& p : *d.window) {
      window.push_back({{"secondsBeforeLatest",
                         std::chrono::duration<double>(d.window->back().at - p.at).count()},
                        {"utilizationPercent", Optional(p.utilization_percent)},
                        {"framebufferUsedMiB", Optional(p.fb_used_mib)},
                        {"temperatureCelsius", Optional(p.temperature_c)},
                        {"powerWatts", Optional(p.power_w)}});
    }
  }
  j["window"] = std::move(window);
  return j;
}

json Time(int64_t unix_ms) { return unix_ms == 0 ? json(nullptr) : json(FormatUnixMs(unix_ms)); }

}  // namespace

std::string RenderStatusJson(const StatusModel& m) {
  json build = json::object();
  for (const auto& [key, value] : m.build) build[key] = value;
  json products = json::array();
  for (const auto& [product, gpus] : m.gpus_by_product) {
    products.push_back({{"product", product}, {"gpus", gpus}});
  }
  json outcomes = json::object();
  for (size_t i = 0; i < kReviewOutcomes; ++i) {
    outcomes[std::string(ReviewOutcomeName(static_cast<ReviewOutcome>(i)))] = m.last_15_minutes[i];
  }
  json resources = json::array();
  for (const ResourceView& r : m.resources) resources.push_back(Resource(r));
  json nodes = json::array();
  for (const NodeView& n : m.nodes) {
    json node_resources = json::array();
    for (const ResourceView& r : n.resources) {
      json j = Resource(r);
      j.erase("reserved");
      j["source"] = r.dra ? "dra" : "plugin";
      node_resources.push_back(std::move(j));
    }
    json devices = json::array();
    for (const GpuMetrics& d : n.devices) devices.push_back(Device(d));
    nodes.push_back({{"name", n.name},
                     {"product", n.product},
                     {"gpus", n.gpus},
                     {"ready", n.ready},
                     {"unschedulable", n.unschedulable},
                     {"draPools", n.dra_pools},
                     {"resources", std::move(node_resources)},
                     {"devices", std::move(devices)}});
  }
  json recent = json::array();
  for (const DecisionRecord& r : m.recent) {
    recent.push_back({{"time", Time(r.at_unix_ms)},
                      {"uid", r.uid},
                      {"object", r.object},
                      {"outcome", ReviewOutcomeName(r.outcome)},
                      {"asked", r.asked},
                      {"fallback", r.fallback},
                      {"sharingMode", r.sharing_mode},
                      {"node", r.node},
                      {"warnings", r.warnings},
                      {"trail", r.trail}});
  }
  json queued = json::array();
  for (const QueuedView& q : m.queue) {
    queued.push_back(
        {{"pod", q.pod}, {"asks", q.asks}, {"priority", q.priority}, {"created", q.created}});
  }
  json j = {
      {"time", Time(m.now_unix_ms)},
      {"ready", m.ready},
      {"build", std::move(build)},
      {"inventory",
       {{"source", m.inventory_source},
        {"updated", Time(m.inventory_at_unix_ms)},
        {"ageSeconds",
         m.inventory_at_unix_ms == 0
             ? json(nullptr)
             : json(static_cast<double>(m.now_unix_ms - m.inventory_at_unix_ms) / 1000)},
        {"version", m.inventory_version},
        {"nodes", m.node_count},
        {"pods", m.pod_count},
        {"gpusByProduct", std::move(products)},
        {"resources", std::move(resources)}}},
      {"gpuMetrics",
       {{"nodes", m.metrics_nodes},
        {"ageSeconds", m.metrics_age_ms < 0 ? json(nullptr)
                                            : json(static_cast<double>(m.metrics_age_ms) / 1000)}}},
      {"decisions",
       {{"last15Minutes", std::move(outcomes)},
        {"failOpenTotal", m.fail_open_total},
        {"failClosedTotal", m.fail_closed_total},
        {"recent", std::move(recent)}}},
      {"queue",
       {{"enabled", m.queue_enabled}, {"waiting", m.queue_waiting}, {"pods", std::move(queued)}}},
      {"certificateExpiry", m.certificate_expiry_unix == 0
                                ? json(nullptr)
                                : json(FormatUnixMs(m.certificate_expiry_unix * 1000))},
      {"policy",
       {{"file", m.policy_path},
        {"sha256Prefix", m.policy_digest},
        {"loaded", Time(m.policy_loaded_unix_ms)},
        {"text", m.policy_text}}},
      {"nodes",
       {{"filter", m.query.node},
        {"page", m.query.page},
        {"perPage", m.query.per_page},
        {"pages", m.pages},
        {"matching", m.matching_nodes},
        {"items", std::move(nodes)}}},
  };
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpuadmit
