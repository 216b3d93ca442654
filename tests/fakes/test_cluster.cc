#include "tests/fakes/test_cluster.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpuadmit::testing {

std::string ReadSourceFile(const std::string& relative_path) {
  std::string path = std::string(GPUADMIT_SOURCE_DIR) + "/" + relative_path;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

nlohmann::json ReadJsonFile(const std::string& relative_path) {
  return nlohmann::json::parse(ReadSourceFile(relative_path));
}

nlohmann::json DemoCluster() { return ReadJsonFile("manifests/examples/demo-cluster.json"); }

void AddBoundPods(nlohmann::json& cluster, const std::string& node, const std::string& resource,
                  int count) {
  static int serial = 0;
  for (int i = 0; i < count; ++i) {
    std::string name = "filler-" + std::to_string(++serial);
    nlohmann::json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", "default"}}},
        {"spec",
         {{"nodeName", node},
          {"containers",
           {{{"name", "main"},
             {"image", "busybox"},
             {"resources", {{"limits", {{resource, "1"}}}, {"requests", {{resource, "1"}}}}}}}}}},
        {"status", {{"phase", "Running"}}}};
    cluster["items"].push_back(std::move(pod));
  }
}

InventorySnapshot SnapshotOf(const nlohmann::json& cluster) {
  auto snapshot = InventorySnapshot::FromObjects(cluster);
  if (!snapshot.ok()) throw std::runtime_error(snapshot.error().message);
  return std::move(snapshot).value();
}

nlohmann::json PatchOf(const nlohmann::json& response) {
  if (!response.contains("patch")) return nlohmann::json::array();
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string raw;
  int bits = 0;
  uint32_t acc = 0;
  for (char c : response["patch"].get<std::string>()) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    if ((bits += 6) >= 8) raw += static_cast<char>((acc >> (bits -= 8)) & 0xFF);
  }
  return nlohmann::json::parse(raw);
}

}  // namespace gpuadmit::testing
