#include "webhook/status/status_model.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <tuple>

#include "core/plan/queue_gate.h"

namespace gpuadmit {
namespace {

constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kMigPrefix = "nvidia.com/mig-";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` percent-decoded, '+' as a space (HTML forms send that).
Result<std::string> QueryDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) return Error{"bad percent-encoding in \"" + std::string(text) + "\""};
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

Result<size_t> PositiveNumber(std::string_view key, std::string_view value, size_t max) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n == 0 || n > max) {
    return Error{std::string(key) + " must be a number from 1 to " + std::to_string(max) +
                 ", not \"" + std::string(value) + "\""};
  }
  return n;
}

std::string Sha256Prefix(std::string_view text, size_t hex_digits) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) return "";
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < length && hex.size() < hex_digits; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex.substr(0, hex_digits);
}

bool Matches(const NodeInventory& n, std::string_view filter) {
  if (filter.empty()) return true;
  return n.name().find(filter) != std::string::npos ||
         n.Product().find(filter) != std::string_view::npos;
}

int64_t GpusOf(const NodeFacts& facts) {
  if (facts.gpu.count > 0) return facts.gpu.count;
  auto it = facts.allocatable.find(kGpuResource);
  return it == facts.allocatable.end() ? 0 : it->second;
}

int64_t Get(const ResourceList& list, const std::string& resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second;
}

NodeView ViewOf(const NodeInventory& n, const ClusterGpuMetrics* metrics) {
  NodeView v{.name = n.name(),
             .product = std::string(n.Product()),
             .gpus = GpusOf(*n.facts),
             .ready = n.facts->ready,
             .unschedulable = n.facts->unschedulable,
             .dra_pools = n.facts->dra_pools};
  std::vector<std::string> names;
  for (const auto& [resource, count] : n.facts->allocatable) names.push_back(resource);
  for (const ResourceList* list : {&n.used, &n.queued}) {
    for (const auto& [resource, count] : *list) names.push_back(resource);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& resource : names) {
    v.resources.push_back({.resource = resource,
                           .allocatable = Get(n.facts->allocatable, resource),
                           .used = Get(n.used, resource),
                           .queued = Get(n.queued, resource),
                           .free = n.Free(resource),
                           .dra = n.facts->dra_allocatable.contains(resource)});
  }
  if (metrics != nullptr) {
    if (const NodeGpuMetrics* m = metrics->FindNode(n.name())) v.devices = m->gpus;
  }
  return v;
}

// The pods `gate` holds, in queue order, the first kMaxQueuedShown of them into `m.queue`.
void CollectQueue(const InventorySnapshot& snapshot, const std::string& gate, StatusModel& m) {
  std::vector<const PodRecord*> held;
  for (const PodRecord& pod : snapshot.gated()) {
    if (pod.queued->HeldBy(gate)) held.push_back(&pod);
  }
  m.queue_waiting = held.size();
  auto order = [](const PodRecord* a, const PodRecord* b) {
    return std::tuple(-int64_t{a->queued->priority}, a->queued->created, a->key) <
           std::tuple(-int64_t{b->queued->priority}, b->queued->created, b->key);
  };
  size_t shown = std::min(held.size(), kMaxQueuedShown);
  std::partial_sort(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(shown), held.end(),
                    order);
  for (size_t i = 0; i < shown; ++i) {
    const PodRecord& pod = *held[i];
    std::string asks;
    for (const auto& [resource, count] : pod.need) {
      if (!asks.empty()) asks += ", ";
      asks += resource + "=" + std::to_string(count);
    }
    m.queue.push_back({pod.key, std::move(asks), pod.queued->priority, pod.queued->created});
  }
}

}  // namespace

Result<StatusQuery> ParseStatusQuery(std::string_view query) {
  StatusQuery q;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    auto value = QueryDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!value.ok()) return value.error();
    if (key == "node") {
      q.node = value.value();
    } else if (key == "page") {
      auto n = PositiveNumber(key, value.value(), 1'000'000);
      if (!n.ok()) return n.error();
      q.page = n.value();
    } else if (key == "per_page") {
      auto n = PositiveNumber(key, value.value(), StatusQuery::kMaxPerPage);
      if (!n.ok()) return n.error();
      q.per_page = n.value();
    }
  }
  return q;
}

StatusModel CollectStatus(const StatusSources& sources, const StatusQuery& query,
                          int64_t now_unix_ms) {
  const AdmissionHandler& handler = sources.handler;
  StatusModel m;
  m.now_unix_ms = now_unix_ms;
  m.ready = sources.ready ? sources.ready() : handler.Ready();
  m.build = sources.build;
  m.inventory_source = sources.inventory_source;
  m.query = query;

  std::shared_ptr<const InventorySnapshot> snapshot = handler.snapshot();
  std::shared_ptr<const InventoryGauges> gauges =
      sources.publisher ? sources.publisher->gauges() : nullptr;
  std::shared_ptr<const ClusterGpuMetrics> metrics = handler.gpu_metrics();
  if (snapshot != nullptr) {
    m.inventory_at_unix_ms = handler.snapshot_at_unix_ms();
    m.inventory_version = snapshot->version();
    m.node_count = snapshot->nodes().size();
    m.pod_count = snapshot->pod_count();
    std::map<std::string, int64_t, std::less<>> by_product;
    for (const NodeInventory& n : snapshot->nodes()) {
      int64_t gpus = GpusOf(*n.facts);
      if (gpus > 0) by_product[std::string(n.Product())] += gpus;
    }
    m.gpus_by_product.assign(by_product.begin(), by_product.end());

    std::vector<const NodeInventory*> matching;
    for (const NodeInventory& n : snapshot->nodes()) {
      if (Matches(n, query.node)) matching.push_back(&n);
    }
    m.matching_nodes = matching.size();
    m.pages = std::max<size_t>(1, (matching.size() + query.per_page - 1) / query.per_page);
    size_t first = std::min(matching.size(), (query.page - 1) * query.per_page);
    size_t last = std::min(matching.size(), first + query.per_page);
    for (size_t i = first; i < last; ++i) m.nodes.push_back(ViewOf(*matching[i], metrics.get()));
  }
  if (gauges != nullptr) {
    for (const auto& [resource, g] : gauges->cluster) {
      ResourceView v{resource, g.allocatable, g.used, g.queued, g.reserved, g.free};
      if (resource.starts_with(kMigPrefix)) {
        auto stranded = gauges->stranded_slices.find(resource.substr(kMigPrefix.size()));
        v.stranded_slices = stranded == gauges->stranded_slices.end() ? 0 : stranded->second;
      }
      m.resources.push_back(std::move(v));
    }
  }
  if (metrics != nullptr) {
    m.metrics_nodes = metrics->nodes().size();
    auto age = std::chrono::steady_clock::now() - metrics->observed_at();
    m.metrics_age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(age).count();
  }

  if (std::shared_ptr<const Policy> policy = handler.policy()) {
    m.queue_enabled = policy->queue.enabled;
    if (snapshot != nullptr) CollectQueue(*snapshot, CapacityGate(*policy), m);
  }

  m.last_15_minutes = handler.decision_log().Outcomes(now_unix_ms);
  m.recent = handler.decision_log().Recent();
  m.fail_open_total = sources.metrics.Value(Counter::kReviewsFailOpen);
  m.fail_closed_total = sources.metrics.Value(Counter::kReviewsFailClosed);
  m.certificate_expiry_unix = sources.metrics.CertificateExpiry();

  if (sources.policy_path) m.policy_path = sources.policy_path();
  if (sources.policy_text) m.policy_text = sources.policy_text();
  if (sources.policy_loaded_unix_ms) m.policy_loaded_unix_ms = sources.policy_loaded_unix_ms();
  m.policy_digest = Sha256Prefix(m.policy_text, 12);
  return m;
}

}  // namespace gpuadmit
