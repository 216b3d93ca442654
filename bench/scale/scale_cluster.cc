#include "bench/scale/scale_cluster.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace gpuadmit::bench {
namespace {

std::string Base64Url(std::string_view in) {
  static constexpr char kChars[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t bits = 0;
  int have = 0;
  for (unsigned char c : in) {
    bits = (bits << 8) | c;
    have += 8;
    while (have >= 6) out += kChars[(bits >> (have -= 6)) & 63];
  }
  if (have > 0) out += kChars[(bits << (6 - have)) & 63];
  return out;
}

// An apiserver continue token: base64url of the etcd key the next page starts after.
std::string ContinueToken(uint64_t resource_version, std::string_view last_key) {
  return Base64Url(R"({"v":"meta.k8s.io/v1","rv":)" + std::to_string(resource_version) +
                   R"(,"start":")" + std::string(last_key) + R"(\u0000"})");
}

template <typename AppendItem, typename KeyOf>
ListPages Pages(const char* kind, int count, int page_size, uint64_t resource_version,
                AppendItem append_item, KeyOf key_of) {
  ListPages pages;
  for (int start = 0; start < count; start += page_size) {
    int end = std::min(count, start + page_size);
    std::string body = std::string(R"({"kind":")") + kind +
                       R"(","apiVersion":"v1","metadata":{"resourceVersion":")" +
                       std::to_string(resource_version) + "\"";
    std::string token = end < count ? ContinueToken(resource_version, key_of(end - 1)) : "";
    if (!token.empty()) {
      body +=
          R"(,"continue":")" + token + R"(","remainingItemCount":)" + std::to_string(count - end);
    }
    body += R"(},"items":[)";
    for (int i = start; i < end; ++i) {
      if (i > start) body += ',';
      append_item(body, i);
    }
    body += "]}";
    pages.bodies.push_back(std::move(body));
    pages.continue_tokens.push_back(std::move(token));
  }
  return pages;
}

}  // namespace

ScaleCluster::ScaleCluster(int nodes, int pods) {
  nodes_.resize(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    NodeShape& n = nodes_[static_cast<size_t>(i)];
    int tenth = i % 10;  // 60% whole GPUs, 10% 7x1g, 10% 2x3g, 20% mixed
    n.layout = tenth < 6    ? Layout::kWholeGpu
               : tenth == 6 ? Layout::kMig1g
               : tenth == 7 ? Layout::kMig3g
                            : Layout::kMigMixed;
    n.h100 = (i / 10) % 2 == 0;
    n.cordoned = ScaleHash(static_cast<uint64_t>(i), 2) % 100 == 0;
    n.not_ready = !n.cordoned && ScaleHash(static_cast<uint64_t>(i), 3) % 200 == 0;
    n.tainted = ScaleHash(static_cast<uint64_t>(i), 4) % 20 == 0;
  }
  PlanPods(pods);
}

void ScaleCluster::PlanPods(int pods) {
  int nodes = node_count();
  int pending = pods * 3 / 100;
  int bound = pods - pending;
  // Between 19 and 39 pods a node before scaling to the total; kubelet's limit is 110.
  std::vector<int> per_node(static_cast<size_t>(nodes));
  int64_t weights = 0;
  for (int i = 0; i < nodes; ++i) {
    per_node[static_cast<size_t>(i)] =
        19 + static_cast<int>(ScaleHash(static_cast<uint64_t>(i), 5) % 21);
    weights += per_node[static_cast<size_t>(i)];
  }
  int placed = 0;
  for (int& c : per_node) {
    c = std::min<int>(110, static_cast<int>(c * static_cast<int64_t>(bound) / weights));
    placed += c;
  }
  for (int i = 0; placed < bound; i = (i + 1) % nodes) {
    if (per_node[static_cast<size_t>(i)] < 110) ++per_node[static_cast<size_t>(i)], ++placed;
  }

  pods_.reserve(static_cast<size_t>(pods) + 1);
  for (int i = 0; i < nodes; ++i) {
    const NodeShape& node = nodes_[static_cast<size_t>(i)];
    int gpus_left = 6 + static_cast<int>(ScaleHash(static_cast<uint64_t>(i), 6) % 3);
    int left_1g = node.layout == Layout::kMig1g ? 56 : node.layout == Layout::kMigMixed ? 16 : 0;
    int left_3g = node.layout == Layout::kMig3g ? 16 : node.layout == Layout::kMigMixed ? 8 : 0;
    int left_2g = node.layout == Layout::kMigMixed ? 8 : 0;
    for (int k = 0; k < per_node[static_cast<size_t>(i)]; ++k) {
      PodShape p;
      p.node = i;
      uint64_t h = ScaleHash(pods_.size(), 7);
      auto take = [&](GpuAsk ask, int count, int& left) {
        if (left < count) return false;
        left -= count;
        p.ask = ask;
        p.count = static_cast<uint8_t>(count);
        return true;
      };
      if (left_2g > 0) {
        take(GpuAsk::kMig2g, 1, left_2g);  // every 2g.20gb in the cluster is in use
      } else if (h % 3 == 0) {
        uint64_t pick = (h >> 8) % 20;
        switch (node.layout) {
          case Layout::kWholeGpu:
            take(GpuAsk::kGpu,
                 pick == 0  ? 4
                 : pick < 4 ? 2
                            : 1,
                 gpus_left) ||
                take(GpuAsk::kGpu, 1, gpus_left);
            break;
          case Layout::kMig1g:
            take(GpuAsk::kMig1g, 1, left_1g);
            break;
          case Layout::kMig3g:
            take(GpuAsk::kMig3g, 1, left_3g);
            break;
          case Layout::kMigMixed:
            (pick % 2 == 0 && take(GpuAsk::kMig3g, 1, left_3g)) || take(GpuAsk::kMig1g, 1, left_1g);
            break;
        }
      }
      pods_.push_back(p);
    }
  }
  for (int q = 0; q < pending; ++q) {
    PodShape p;
    uint64_t h = ScaleHash(pods_.size(), 8);
    if (h % 4 == 0) p.ask = GpuAsk::kMig2g, p.count = 1;
    if (h % 4 == 1) p.ask = GpuAsk::kGpu, p.count = 1;
    if ((h >> 4) % 10 == 0)
      p.wanted_node = static_cast<int32_t>(ScaleHash(pods_.size(), 9) % nodes);
    pods_.push_back(p);
  }
  PodShape sentinel;
  sentinel.node = 0;
  sentinel.sentinel = true;
  pods_.push_back(sentinel);
}

uint64_t ScaleCluster::list_resource_version() const { return kResourceVersionBase; }

std::string ScaleCluster::NodeName(int node) const {
  return bench::NodeName(node, nodes_[static_cast<size_t>(node)]);
}

void ScaleCluster::AppendNode(std::string& out, int node) const {
  bench::AppendNode(out, node, nodes_[static_cast<size_t>(node)]);
}

PodVersion ScaleCluster::InitialVersion(int pod) const {
  return {pods_[static_cast<size_t>(pod)].node, 0, 100000 + static_cast<uint64_t>(pod)};
}

void ScaleCluster::AppendPod(std::string& out, int pod, const PodVersion& version) const {
  const PodShape& shape = pods_[static_cast<size_t>(pod)];
  bench::AppendPod(out, pod, shape, version, version.node >= 0 ? NodeName(version.node) : "",
                   shape.wanted_node >= 0 ? NodeName(shape.wanted_node) : "");
}

ListPages ScaleCluster::NodeListPages(int page_size) const {
  return Pages(
      "NodeList", node_count(), page_size, list_resource_version(),
      [this](std::string& out, int i) { AppendNode(out, i); },
      [this](int i) { return NodeName(i); });
}

ListPages ScaleCluster::PodListPages(int page_size) const {
  return Pages(
      "PodList", pod_count(), page_size, list_resource_version(),
      [this](std::string& out, int i) { AppendPod(out, i, InitialVersion(i)); },
      [this](int i) { return PodKey(i, pods_[static_cast<size_t>(i)]); });
}

std::vector<std::string> ScaleCluster::WatchBlocks(int count, size_t block_bytes) const {
  int pods = pod_count();
  int bound = 0;
  std::vector<int32_t> node_of(static_cast<size_t>(pods));
  std::vector<uint16_t> restarts(static_cast<size_t>(pods));
  std::array<std::vector<int32_t>, 5> movable;  // by GpuAsk: bound pods asking for one device
  for (int j = 0; j < pods; ++j) {
    const PodShape& p = pods_[static_cast<size_t>(j)];
    node_of[static_cast<size_t>(j)] = p.node;
    if (p.node >= 0) ++bound;
    if (p.node >= 0 && p.ask != GpuAsk::kNone && p.count == 1) {
      movable[static_cast<size_t>(p.ask)].push_back(j);
    }
  }
  std::vector<std::string> blocks;
  std::string block;
  uint64_t rv = list_resource_version();
  auto emit = [&](const char* type, int pod, const PodVersion& version) {
    block += R"({"type":")";
    block += type;
    block += R"(","object":)";
    AppendPod(block, pod, version);
    block += "}\n";
    if (block.size() >= block_bytes) {
      blocks.push_back(std::move(block));
      block.clear();
      block.reserve(block_bytes + 16384);
    }
  };
  auto modified = [&](int j) {
    size_t at = static_cast<size_t>(j);
    emit("MODIFIED", j, {node_of[at], restarts[at], ++rv});
  };
  static constexpr GpuAsk kMoving[] = {GpuAsk::kGpu, GpuAsk::kMig1g, GpuAsk::kMig2g,
                                       GpuAsk::kMig3g};
  block.reserve(block_bytes + 16384);
  for (int e = 0; e < count - 1;) {
    const auto& candidates = movable[static_cast<size_t>(kMoving[(e / 10) % 4])];
    if (e % 10 == 8 && e + 2 < count && candidates.size() >= 2) {
      // Two pods with the same ask trade nodes: both nodes' counts are back after the pair.
      size_t ia = ScaleHash(static_cast<uint64_t>(e), 23) % candidates.size();
      size_t ib = ScaleHash(static_cast<uint64_t>(e), 24) % candidates.size();
      int a = candidates[ia];
      int b = candidates[ib];
      for (size_t tries = 0; node_of[static_cast<size_t>(a)] == node_of[static_cast<size_t>(b)] &&
                             tries < candidates.size();
           ++tries) {
        b = candidates[(ib + tries) % candidates.size()];
      }
      std::swap(node_of[static_cast<size_t>(a)], node_of[static_cast<size_t>(b)]);
      modified(a);
      modified(b);
      e += 2;
      continue;
    }
    int j =
        static_cast<int>(ScaleHash(static_cast<uint64_t>(e), 22) % static_cast<uint64_t>(bound));
    ++restarts[static_cast<size_t>(j)];
    modified(j);
    ++e;
  }
  emit("ADDED", pods, {0, 0, ++rv});
  if (!block.empty()) blocks.push_back(std::move(block));
  return blocks;
}

}  // namespace gpuadmit::bench
