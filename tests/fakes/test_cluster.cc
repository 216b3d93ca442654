#include "tests/fakes/test_cluster.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "core/admission/admission.h"
#include "core/admission/base64.h"
#include "core/json/yaml_json.h"

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

void AddSharedGpuNode(nlohmann::json& cluster, const std::string& name, const std::string& strategy,
                      int gpus, int replicas) {
  nlohmann::json node;
  for (const nlohmann::json& item : cluster["items"]) {
    if (item["kind"] == "Node" && item["metadata"]["name"] == "gpu-small") node = item;
  }
  if (node.is_null()) throw std::runtime_error("the cluster has no gpu-small node to copy");
  node["metadata"]["name"] = name;
  nlohmann::json& labels = node["metadata"]["labels"];
  for (auto it = labels.begin(); it != labels.end();) {
    it = it.key().starts_with("nvidia.com/mig") ? labels.erase(it) : std::next(it);
  }
  labels["kubernetes.io/hostname"] = name;
  labels["nvidia.com/mig.capable"] = "false";
  labels["nvidia.com/gpu.count"] = std::to_string(gpus);
  labels["nvidia.com/gpu.replicas"] = std::to_string(replicas);
  labels["nvidia.com/gpu.sharing-strategy"] = strategy;
  labels["nvidia.com/mps.capable"] = strategy == "mps" ? "true" : "false";
  for (const char* field : {"capacity", "allocatable"}) {
    nlohmann::json& list = node["status"][field];
    for (auto it = list.begin(); it != list.end();) {
      it = it.key().starts_with("nvidia.com/") ? list.erase(it) : std::next(it);
    }
    list["nvidia.com/gpu.shared"] = std::to_string(gpus * replicas);
  }
  cluster["items"].push_back(std::move(node));
}

InventorySnapshot SnapshotOf(const nlohmann::json& cluster) {
  auto snapshot = InventorySnapshot::FromObjects(cluster);
  if (!snapshot.ok()) throw std::runtime_error(snapshot.error().message);
  return std::move(snapshot).value();
}

nlohmann::json GpuNode(const std::string& name, int gpus, const std::string& product) {
  static const nlohmann::json recorded = [] {
    auto node =
        YamlToJson(ReadSourceFile("tests/fixtures/nodes/tesla-t4-x2-gpu-2-kubectl-edit.yaml"));
    if (!node.ok()) throw std::runtime_error(node.error().message);
    return std::move(node).value();
  }();
  nlohmann::json node = recorded;
  node["metadata"]["name"] = name;
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = product;
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = std::to_string(gpus);
  for (const char* section : {"capacity", "allocatable"}) {
    node["status"][section]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return node;
}

nlohmann::json ListOf(const std::vector<nlohmann::json>& items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

std::string DeviceUuid(const nlohmann::json& cluster, const std::string& name) {
  for (const nlohmann::json& item : cluster["items"]) {
    if (item["kind"] != "ResourceSlice" || !item["spec"].contains("devices")) continue;
    for (const nlohmann::json& d : item["spec"]["devices"]) {
      if (d["name"] == name) return d["attributes"]["uuid"]["string"];
    }
  }
  return "";
}

std::string DcgmGpu(const std::string& host, int gpu, double utilization_percent,
                    double fb_used_mib, double fb_free_mib) {
  std::string labels = "{gpu=\"" + std::to_string(gpu) + "\",UUID=\"GPU-" + host + "-" +
                       std::to_string(gpu) + "\",device=\"nvidia" + std::to_string(gpu) +
                       "\",modelName=\"Tesla T4\",Hostname=\"" + host + "\"}";
  auto line = [&](std::string_view metric, double value) {
    return std::string(metric) + labels + " " + std::to_string(value) + "\n";
  };
  return line(kDcgmGpuUtil, utilization_percent) + line(kDcgmFbUsed, fb_used_mib) +
         line(kDcgmFbFree, fb_free_mib);
}

ClusterGpuMetrics MetricsOf(std::string_view exposition) {
  return ClusterGpuMetrics::FromReading(GpuReadingFromExposition(exposition), MetricsTime{});
}

nlohmann::json GpuPodReview(const std::string& name, const std::string& uid) {
  nlohmann::json review = ReadJsonFile("tests/fixtures/gpu/kubectl-pod.json");
  review["request"]["uid"] = uid;
  review["request"]["name"] = name;
  review["request"]["object"]["metadata"]["name"] = name;
  return review;
}

nlohmann::json PatchOf(const nlohmann::json& response) {
  if (!response.contains("patch")) return nlohmann::json::array();
  auto raw = Base64Decode(response["patch"].get<std::string>());
  return raw.ok() ? nlohmann::json::parse(raw.value()) : nlohmann::json();
}

RequestOverValues::RequestOverValues(const AdmissionRequest& decoded)
    : object(decoded.object.ToJson()), old_object(decoded.old_object.ToJson()), request(decoded) {
  request.tape = nullptr;
  request.object = decoded.object.present() ? JsonView(object) : JsonView();
  request.old_object = decoded.old_object.present() ? JsonView(old_object) : JsonView();
}

}  // namespace gpuadmit::testing
