// The Alibaba openb trace as simulate reads and maps it: rows from the published files' own
// lines, the mapping of nodes and pods onto Kubernetes objects, and the FGD replay order.
#include "core/sim/alibaba_trace.h"

#include <gtest/gtest.h>

#include <set>

namespace gpuadmit {
namespace {

using nlohmann::json;

// The first rows of openb_node_list_gpu_node.csv and openb_pod_list_gpuspec33.csv, and rows
// of each kind further down (a T4 node, an 8-GPU pod, a pod with a gpu_spec).
constexpr char kNodes[] =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "openb-node-0000,64000,262144,2,P100\n"
    "openb-node-0001,64000,262144,2,P100\n"
    "openb-node-0227,96000,786432,8,G2\n"
    "openb-node-0999,32000,131072,0,\n";
constexpr char kPods[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
    "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
    "openb-pod-0017,88000,327680,8,1000,,BE,Running,0,1,0\n"
    "openb-pod-0042,8000,30720,1,500,V100M16|V100M32,BE,Running,0,1,0\n"
    "openb-pod-0050,4000,8192,0,0,,BE,Running,0,1,0\n";

TEST(AlibabaTrace, ReadsTheNodeAndPodListsByTheirHeaders) {
  auto nodes = ReadTraceNodes(kNodes);
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes.value().size(), 4u);
  const TraceNode& g2 = nodes.value()[2];
  EXPECT_EQ(g2.name, "openb-node-0227");
  EXPECT_EQ(g2.cpu_milli, 96000);
  EXPECT_EQ(g2.memory_mib, 786432);
  EXPECT_EQ(g2.gpus, 8);
  EXPECT_EQ(g2.model, "G2");

  auto pods = ReadTracePods(kPods);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods.value().size(), 5u);
  const TracePod& p = pods.value()[3];
  EXPECT_EQ(p.name, "openb-pod-0042");
  EXPECT_EQ(p.gpus, 1);
  EXPECT_EQ(p.gpu_milli, 500);
  EXPECT_EQ(p.gpu_spec, "V100M16|V100M32");
  EXPECT_EQ(p.qos, "BE");
  // multigpu20 has only the first five columns.
  auto short_list = ReadTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,2,1,1000\n");
  ASSERT_TRUE(short_list.ok());
  EXPECT_EQ(short_list.value()[0].gpu_spec, "");
}

TEST(AlibabaTrace, ErrorsNameTheLineAndTheColumn) {
  auto bad = ReadTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn1,64000,lots,2,P100\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "line 2: memory_mib \"lots\" is not a whole number >= 0");
  auto no_column = ReadTracePods("name,cpu_milli,memory_mib,num_gpu\n");
  ASSERT_FALSE(no_column.ok());
  EXPECT_EQ(no_column.error().message, "the header has no \"gpu_milli\" column");
  EXPECT_FALSE(ReadTraceNodes("").ok());
}

TEST(AlibabaTrace, NodesBecomeWholeOrTimeSlicedGpuNodes) {
  auto nodes = ReadTraceNodes(kNodes).value();
  TraceMapping mapping;
  json cluster = TraceCluster(nodes, mapping);
  ASSERT_EQ(cluster["items"].size(), 4u);
  const json& p100 = cluster["items"][0];
  EXPECT_EQ(p100["metadata"]["labels"]["nvidia.com/gpu.product"], "Tesla-P100-PCIE-16GB");
  EXPECT_EQ(
      p100["status"]["allocatable"],
      (json{{"cpu", "64000m"}, {"memory", "262144Mi"}, {"pods", "110"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(cluster["items"][2]["metadata"]["labels"]["nvidia.com/gpu.product"], "G2");
  EXPECT_FALSE(cluster["items"][3]["status"]["allocatable"].contains("nvidia.com/gpu"));

  mapping.shared_fraction = 0.5;  // one of the two P100 nodes, none of the single G2
  json shared = TraceCluster(nodes, mapping);
  const json& first = shared["items"][0];
  EXPECT_EQ(first["status"]["allocatable"]["nvidia.com/gpu.shared"], "8");
  EXPECT_FALSE(first["status"]["allocatable"].contains("nvidia.com/gpu"));
  EXPECT_EQ(first["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"], "time-slicing");
  EXPECT_EQ(first["metadata"]["labels"]["nvidia.com/gpu.replicas"], "4");
  EXPECT_EQ(shared["items"][1]["status"]["allocatable"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(shared["items"][2]["status"]["allocatable"]["nvidia.com/gpu"], "8");
  // A replay counts the time-sliced node's 8 replicas as its 2 GPUs, and says they are shared.
  auto replay = Replay(shared, {}, nullptr, ReplayOptions{});
  ASSERT_TRUE(replay.ok()) << replay.error().message;
  EXPECT_EQ(replay.value().capacity_gpus, 12);
  EXPECT_EQ(replay.value().shared_gpus, 2);
}

TEST(AlibabaTrace, AFractionalPodAsksForAWholeGpuAndKeepsItsShareAndSpec) {
  auto pods = ReadTracePods(kPods).value();
  json pod = TracePodObject(pods[3], "p", TraceMapping{});
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["resources"]["requests"], (json{{"cpu", "8000m"}, {"memory", "30720Mi"}}));
  EXPECT_EQ(container["resources"]["limits"], (json{{"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpuadmit.io/gpu-milli"], "500");
  EXPECT_EQ(pod["metadata"]["labels"]["gpuadmit.io/workload-type"], "batch");
  EXPECT_EQ(
      pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
         ["nodeSelectorTerms"][0]["matchExpressions"][0],
      (json{{"key", "nvidia.com/gpu.product"},
            {"operator", "In"},
            {"values", {"Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-32GB"}}}));
  json cpu_only = TracePodObject(pods[4], "c", TraceMapping{});
  EXPECT_FALSE(cpu_only["spec"]["containers"][0]["resources"].contains("limits"));
  EXPECT_EQ(TraceDemandGpus(pods[2]), 8);
  EXPECT_EQ(TraceDemandGpus(pods[1]), 1);
}

TEST(AlibabaTrace, ArrivalsAreShuffledBySeedAndInflatedToTheTarget) {
  auto pods = ReadTracePods(kPods).value();  // asks 1 + 1 + 8 + 1 = 11 GPUs
  TraceMapping mapping;
  auto names = [](const std::vector<Arrival>& a) {
    std::vector<std::string> out;
    for (const Arrival& x : a) out.push_back(x.pod["metadata"]["name"]);
    return out;
  };
  auto a = TraceArrivals(pods, mapping, 1, /*capacity_gpus=*/20);
  EXPECT_EQ(names(a), names(TraceArrivals(pods, mapping, 1, 20)));  // one seed, one order
  bool differs = false;
  for (uint64_t seed = 2; seed < 6; ++seed)
    differs |= names(a) != names(TraceArrivals(pods, mapping, seed, 20));
  EXPECT_TRUE(differs);
  double asked = 0;
  std::set<std::string> unique;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(a[i].at, static_cast<double>(i));
    EXPECT_FALSE(a[i].duration.has_value());
    unique.insert(a[i].pod["metadata"]["name"].get<std::string>());
    const json& limits = a[i].pod["spec"]["containers"][0]["resources"];
    if (limits.contains("limits"))
      asked += std::stod(limits["limits"]["nvidia.com/gpu"].get<std::string>());
  }
  EXPECT_EQ(unique.size(), a.size());
  EXPECT_GE(asked, 26.0);      // 130% of 20 GPUs
  EXPECT_LT(asked, 26.0 + 8);  // the last draw crossed it
  // Every trace pod comes once before any is drawn again.
  std::vector<std::string> order = names(a);
  EXPECT_EQ(std::set<std::string>(order.begin(), order.begin() + 5).size(), 5u);
}

TEST(AlibabaTrace, InItsOwnTimeAPodArrivesAtCreationOverTheSpeedupAndRunsFromScheduledToDeleted) {
  auto pods = ReadTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "late,1000,1024,1,1000,,LS,Running,5000,9000,6000\n"
      "early,1000,1024,2,1000,,LS,Running,1000,1500,\n"
      "stays,1000,1024,1,1000,,LS,Running,3000,,3000\n"
      "unknown,1000,1024,1,1000,,LS,Running,,,\n");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(pods.value()[1].scheduled_time, std::nullopt);
  EXPECT_EQ(pods.value()[2].deletion_time, std::nullopt);
  std::vector<Arrival> arrivals = TraceArrivalsTimed(pods.value(), TraceMapping{}, 10);
  ASSERT_EQ(arrivals.size(), 3u);  // no creation_time: left out
  EXPECT_EQ(arrivals[0].pod["metadata"]["name"], "early");
  EXPECT_EQ(arrivals[0].at, 100);
  EXPECT_EQ(arrivals[0].duration, 500);  // no scheduled_time: from creation
  EXPECT_EQ(arrivals[1].pod["metadata"]["name"], "stays");
  EXPECT_EQ(arrivals[1].at, 300);
  EXPECT_EQ(arrivals[1].duration, std::nullopt);
  EXPECT_EQ(arrivals[2].pod["metadata"]["name"], "late");
  EXPECT_EQ(arrivals[2].at, 500);
  EXPECT_EQ(arrivals[2].duration, 3000);  // the run time is not compressed
}

}  // namespace
}  // namespace gpuadmit
