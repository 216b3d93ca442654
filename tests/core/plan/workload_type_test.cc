// Workload type detection (issue 18): the built-in table over real images and command lines, as
// the projects' own documentation and manifests start them (vLLM, SGLang, Triton, TGI,
// TorchServe, Ray Serve, Ollama, llama.cpp, NIM; torchrun, torch.distributed, DeepSpeed,
// Accelerate, Horovod, MPI; Jupyter, code-server), the recorded pods of tests/fixtures/pods/ and
// the seeds' examples; the word glob; and the policy's patterns before the table.
#include "core/plan/workload_type.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json/yaml_json.h"
#include "core/plan/command_line.h"
#include "core/policy/policy.h"
#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

using nlohmann::json;

// Detection over the given containers (each a Kubernetes container object).
DetectedWorkloadType DetectIn(const json& containers, const WorkloadDetectionPolicy& policy = {}) {
  std::vector<std::vector<std::string>> words;
  std::vector<ContainerLaunch> launches;
  words.reserve(containers.size());
  for (const json& c : containers) words.push_back(CommandLineOf(c));
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    auto text = [&c](const char* field) -> std::string_view {
      return c.contains(field) ? std::string_view(c[field].get_ref<const std::string&>())
                               : std::string_view();
    };
    launches.push_back({text("name"), text("image"), words[i]});
  }
  return DetectWorkloadType(launches, policy);
}

DetectedWorkloadType Detect(const std::string& image, const json& command = json::array(),
                            const json& args = json::array()) {
  return DetectIn(
      json::array({{{"name", "main"}, {"image", image}, {"command", command}, {"args", args}}}));
}

struct Case {
  const char* what;
  std::string image;
  json command;
  json args;
  std::string type;  // "" for unknown
  std::string why;   // "" for no match
};

TEST(WorkloadType, BuiltInTableOverRealImagesAndCommandLines) {
  const Case cases[] = {
      // Inference servers.
      {"vLLM's Kubernetes guide: sh -c with vllm serve",
       "vllm/vllm-openai:latest",
       {"/bin/sh", "-c"},
       {"vllm serve meta-llama/Llama-3.2-1B-Instruct --trust-remote-code "
        "--enable-chunked-prefill --max_num_batched_tokens 1024"},
       "inference",
       "detected from command \"vllm serve\" in container main"},
      {"vLLM's image with its entrypoint: the image says it",
       "vllm/vllm-openai:v0.5.0",
       json::array(),
       {"--model", "facebook/opt-125m"},
       "inference",
       "detected from image vllm/vllm-openai:v0.5.0"},
      {"vLLM's OpenAI server as a module, in any image",
       "registry.example.com/llm/server:1.4",
       {"python", "-u", "-m", "vllm.entrypoints.openai.api_server"},
       {"--host", "0.0.0.0", "--port", "8010", "--model", "openai/gpt-oss-20b",
        "--tensor-parallel-size", "8"},
       "inference",
       "detected from command \"-m vllm.entrypoints.*\" in container main"},
      {"SGLang's launch_server",
       "lmsysorg/sglang:latest",
       {"python3", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
        "--host", "0.0.0.0", "--port", "30000"},
       json::array(),
       "inference",
       "detected from command \"-m sglang.launch_server\" in container main"},
      {"Triton by its full path",
       "nvcr.io/nvidia/tritonserver:24.05-py3",
       {"/opt/tritonserver/bin/tritonserver", "--model-repository=/models"},
       json::array(),
       "inference",
       "detected from command \"tritonserver\" in container main"},
      {"Triton's image with only arguments", "nvcr.io/nvidia/tritonserver:23.10-trtllm-python-py3",
       json::array(), json::array(), "inference",
       "detected from image nvcr.io/nvidia/tritonserver:23.10-trtllm-python-py3"},
      {"TGI's image, its launcher as entrypoint",
       "ghcr.io/huggingface/text-generation-inference:2.0.4",
       json::array(),
       {"--model-id", "bigscience/bloom-560m", "--num-shard", "1"},
       "inference",
       "detected from image ghcr.io/huggingface/text-generation-inference:2.0.4"},
      {"TGI's launcher named",
       "my-registry/tgi-custom:3",
       {"text-generation-launcher", "--model-id", "HuggingFaceH4/zephyr-7b-beta"},
       json::array(),
       "inference",
       "detected from command \"text-generation-launcher\" in container main"},
      {"seed 002's inference-server Pod (its label aside)", "pytorch/torchserve:latest",
       json::array(), json::array(), "inference", "detected from image pytorch/torchserve:latest"},
      {"TorchServe started in its GPU image",
       "pytorch/torchserve:0.11.0-gpu",
       {"torchserve", "--start", "--model-store", "model_store", "--models",
        "densenet161=densenet161.mar", "--foreground"},
       json::array(),
       "inference",
       "detected from command \"torchserve\" in container main"},
      {"Ray Serve's CLI in a Ray image",
       "rayproject/ray-ml:2.9.0-gpu",
       {"/bin/bash", "-c"},
       {"serve run text_ml:app --host 0.0.0.0"},
       "inference",
       "detected from command \"serve run\" in container main"},
      {"Ollama's image", "ollama/ollama:0.3.6", json::array(), json::array(), "inference",
       "detected from image ollama/ollama:0.3.6"},
      {"llama.cpp's server image",
       "ghcr.io/ggml-org/llama.cpp:server-cuda",
       json::array(),
       {"-m", "/models/7B/ggml-model-q4_0.gguf", "--port", "8000", "--host", "0.0.0.0",
        "--n-gpu-layers", "99"},
       "inference",
       "detected from image ghcr.io/ggml-org/llama.cpp:server-cuda"},
      {"llama.cpp's server binary",
       "ubuntu:22.04",
       {"/app/llama-server"},
       {"-m", "/models/model.gguf"},
       "inference",
       "detected from command \"llama-server\" in container main"},
      {"an NVIDIA NIM", "nvcr.io/nim/meta/llama3-8b-instruct:1.0.0", json::array(), json::array(),
       "inference", "detected from image nvcr.io/nim/meta/llama3-8b-instruct:1.0.0"},
      // Training launchers.
      {"a PyTorchJob's torchrun",
       "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
       {"torchrun", "--nproc_per_node=2", "train.py"},
       json::array(),
       "training",
       "detected from command \"torchrun\" in container main"},
      {"torchrun behind a shell, after a pip install",
       "nvcr.io/nvidia/pytorch:24.05-py3",
       {"bash", "-c"},
       {"pip install -r requirements.txt && torchrun --nnodes=$NNODES --nproc_per_node=8 "
        "--rdzv_backend=c10d train.py"},
       "training",
       "detected from command \"torchrun\" in container main"},
      {"python -m torch.distributed.run",
       "registry.baidubce.com/kuizhiqing/torch-imagenet:v1",
       {"python", "-m", "torch.distributed.run", "train.py"},
       json::array(),
       "training",
       "detected from command \"-m torch.distributed.*\" in container main"},
      {"python3 -m torch.distributed.launch",
       "pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime",
       {"python3", "-m", "torch.distributed.launch", "--nproc_per_node=8", "--use_env", "main.py"},
       json::array(),
       "training",
       "detected from command \"-m torch.distributed.*\" in container main"},
      {"DeepSpeed's launcher",
       "deepspeed/deepspeed:v072_torch112_cu117",
       {"deepspeed", "--num_gpus=8", "train.py", "--deepspeed", "ds_config.json"},
       json::array(),
       "training",
       "detected from command \"deepspeed\" in container main"},
      {"Accelerate",
       "huggingface/accelerate:gpu-nightly",
       {"accelerate", "launch", "--multi_gpu", "--num_processes", "2", "train.py"},
       json::array(),
       "training",
       "detected from command \"accelerate launch\" in container main"},
      {"horovodrun",
       "horovod/horovod:0.28.1",
       {"horovodrun", "-np", "4", "-H", "localhost:4", "python", "train.py"},
       json::array(),
       "training",
       "detected from command \"horovodrun\" in container main"},
      {"mpi-operator's Horovod example: mpirun ... python",
       "horovod/horovod:0.20.0-tf2.3.0-torch1.6.0-mxnet1.5.0-py3.7-gpu",
       {"mpirun", "--allow-run-as-root", "-np", "2", "-bind-to", "none", "-map-by", "slot", "-x",
        "NCCL_DEBUG=INFO", "python", "/examples/tensorflow2_mnist.py"},
       json::array(),
       "training",
       "detected from command \"mpirun ... python*\" in container main"},
      // Development.
      {"the Jupyter Docker Stacks' image", "quay.io/jupyter/pytorch-notebook:cuda12-latest",
       json::array(), json::array(), "development",
       "detected from image quay.io/jupyter/pytorch-notebook:cuda12-latest"},
      {"their start script",
       "my-registry/notebook-base:2024.05",
       {"start-notebook.sh", "--NotebookApp.token="},
       json::array(),
       "development",
       "detected from command \"start-notebook.*\" in container main"},
      {"JupyterLab in a PyTorch image",
       "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel",
       {"jupyter", "lab", "--ip=0.0.0.0", "--no-browser", "--allow-root"},
       json::array(),
       "development",
       "detected from command \"jupyter lab\" in container main"},
      {"a Kubeflow notebook", "kubeflownotebookswg/jupyter-pytorch-cuda-full:v1.8.0", json::array(),
       json::array(), "development",
       "detected from image kubeflownotebookswg/jupyter-pytorch-cuda-full:v1.8.0"},
      {"code-server's image",
       "codercom/code-server:4.89.1",
       json::array(),
       {"--bind-addr", "0.0.0.0:8080", "."},
       "development",
       "detected from image codercom/code-server:4.89.1"},
      {"Kubeflow's code-server notebook", "kubeflownotebookswg/codeserver-python:v1.8.0",
       json::array(), json::array(), "development",
       "detected from image kubeflownotebookswg/codeserver-python:v1.8.0"},
      {"what a container runs beats what it was built from",
       "vllm/vllm-openai:latest",
       {"jupyter", "lab", "--ip=0.0.0.0"},
       json::array(),
       "development",
       "detected from command \"jupyter lab\" in container main"},
      // Unknown.
      {"seed 004's worker",
       "agent_bus:latest",
       {"python", "-m", "src.workers.worker"},
       json::array(),
       "",
       ""},
      {"seed 004's GPU test", "nvidia/cuda:12.0-base", {"nvidia-smi"}, json::array(), "", ""},
      {"a plain script", "pytorch/pytorch:latest", {"python", "train.py"}, json::array(), "", ""},
      {"a launcher's flag alone is no launcher",
       "pytorch/pytorch:latest",
       {"python", "train.py", "--deepspeed", "ds_config.json"},
       json::array(),
       "",
       ""},
      {"mpirun without python",
       "mpioperator/mpi-pi",
       {"mpirun", "-n", "2", "/home/mpiuser/pi"},
       json::array(),
       "",
       ""},
      {"serve is a word, serve run a command",
       "node:20",
       {"npm", "run", "serve"},
       json::array(),
       "",
       ""},
  };
  for (const Case& c : cases) {
    DetectedWorkloadType got = Detect(c.image, c.command, c.args);
    EXPECT_EQ(got.type, c.type) << c.what;
    EXPECT_EQ(got.why, c.why) << c.what;
  }
}

// The recorded pods of tests/fixtures/pods/ (copied from ../shared/fixtures/pods/): a GPU burn
// test, run:ai's reservation pod and nginx. None is a server, a launcher or a notebook.
TEST(WorkloadType, RecordedPodsAreUnknown) {
  for (const char* file : {"tests/fixtures/pods/pod-runai-fractional-gpu-0.5.yaml",
                           "tests/fixtures/pods/pod-runai-mig-1g.5gb-running.yaml",
                           "tests/fixtures/pods/pod-runai-reservation-nvidia-gpu-1.yaml",
                           "tests/fixtures/pods/pod-kubectl-get-o-json-kind-cluster.json"}) {
    auto pod = YamlToJson(testing::ReadSourceFile(file));  // JSON is YAML too
    ASSERT_TRUE(pod.ok()) << file;
    const json& containers = pod.value()["spec"]["containers"];
    ASSERT_FALSE(containers.empty()) << file;
    DetectedWorkloadType got = DetectIn(containers);
    EXPECT_FALSE(got.matched()) << file << ": " << got.why;
  }
}

TEST(WorkloadType, EveryContainerIsReadAndTheFirstPatternDecides) {
  json containers =
      json::array({{{"name", "proxy"}, {"image", "envoyproxy/envoy:v1.30"}},
                   {{"name", "notebook"}, {"image", "jupyter/base-notebook"}},
                   {{"name", "server"}, {"image", "x"}, {"args", {"vllm", "serve", "m"}}}});
  // Commands come before images: the server's command, though the notebook comes first.
  EXPECT_EQ(DetectIn(containers).why, "detected from command \"vllm serve\" in container server");
  EXPECT_EQ(DetectIn(containers).type, "inference");
}

TEST(WorkloadType, PolicyPatternsComeBeforeTheTableInFileOrder) {
  WorkloadDetectionPolicy policy;
  policy.patterns = {{"batch", "registry.example.com/etl/", ""},
                     {"serving", "", "python* -m myco.serve"},
                     {"training", "vllm", "python* ... finetune.py"}};
  EXPECT_EQ(
      DetectIn(json::array({{{"name", "c"}, {"image", "Registry.Example.com/ETL/job:1"}}}), policy)
          .why,
      "detected from image Registry.Example.com/ETL/job:1 (workloadDetection.patterns[0])");
  DetectedWorkloadType serving = DetectIn(
      json::array({{{"name", "api"},
                    {"image", "vllm/vllm-openai"},
                    {"command", {"/usr/bin/python3.11", "-m", "myco.serve", "--port", "80"}}}}),
      policy);
  EXPECT_EQ(serving.type, "serving");
  EXPECT_EQ(serving.why,
            "detected from command \"python* -m myco.serve\" in container api "
            "(workloadDetection.patterns[1])");
  DetectedWorkloadType both =
      DetectIn(json::array({{{"name", "ft"},
                             {"image", "vllm/vllm-openai:v0.6.4"},
                             {"command", {"python3", "-u", "finetune.py"}}}}),
               policy);
  EXPECT_EQ(both.type, "training");
  EXPECT_EQ(both.why,
            "detected from image vllm/vllm-openai:v0.6.4 and command \"python* ... finetune.py\" "
            "in container ft (workloadDetection.patterns[2])");
  // A pattern needs all it names: the vLLM image alone falls through to the table.
  EXPECT_EQ(
      DetectIn(json::array({{{"name", "s"}, {"image", "vllm/vllm-openai:v0.6.4"}}}), policy).why,
      "detected from image vllm/vllm-openai:v0.6.4");
}

TEST(WorkloadType, AnUnknownPatternOverrulesTheTable) {
  WorkloadDetectionPolicy policy;
  policy.patterns = {{"unknown", "jupyter-batch-runner", ""}};
  DetectedWorkloadType got =
      DetectIn(json::array({{{"name", "job"}, {"image", "myco/jupyter-batch-runner:2"}}}), policy);
  EXPECT_EQ(got.type, "");
  EXPECT_EQ(got.why,
            "detected from image myco/jupyter-batch-runner:2 (workloadDetection.patterns[0])");
  EXPECT_TRUE(got.matched());
}

TEST(WorkloadType, CommandPatternsAreAGlobOverWords) {
  auto matches = [](std::string_view pattern, std::vector<std::string> words) {
    return CommandMatches(pattern, words);
  };
  EXPECT_TRUE(matches("torchrun", {"torchrun", "train.py"}));
  EXPECT_TRUE(matches("torchrun", {"/usr/local/bin/torchrun"}));  // a path ending in it
  EXPECT_FALSE(matches("torchrun", {"torchrunner"}));
  EXPECT_FALSE(matches("bin/torchrun", {"/usr/local/bin/torchrun"}));  // a path: whole word only
  EXPECT_TRUE(matches("bin/torchrun", {"bin/torchrun"}));
  EXPECT_TRUE(matches("vllm serve", {"x", "vllm", "serve", "m"}));        // anywhere
  EXPECT_FALSE(matches("vllm serve", {"vllm", "--port", "1", "serve"}));  // in a row
  EXPECT_TRUE(matches("vllm serve", {"vllm", "vllm", "serve"}));          // retried after a miss
  EXPECT_TRUE(matches("python* -m", {"/opt/conda/bin/python3.10", "-m", "x"}));
  EXPECT_TRUE(matches("mpirun ... python*", {"mpirun", "python3"}));  // ... may be no words
  EXPECT_TRUE(matches("mpirun ... python*", {"mpirun", "-np", "4", "-x", "A=1", "python", "t"}));
  EXPECT_FALSE(matches("mpirun ... python*", {"python", "mpirun", "-np", "4"}));  // in order
  EXPECT_TRUE(matches("a ... b ... c", {"a", "x", "b", "b", "y", "c"}));
  EXPECT_FALSE(matches("a ... b ... c", {"a", "c", "b"}));
  EXPECT_TRUE(matches("", {}));
  EXPECT_FALSE(matches("torchrun", {}));
  // Longer than kMaxCommandPatternWords (the policy reader refuses it): matches nothing.
  EXPECT_TRUE(matches("a b c d e f g h i j k l m n o p", {"a", "b", "c", "d", "e", "f", "g", "h",
                                                          "i", "j", "k", "l", "m", "n", "o", "p"}));
  EXPECT_FALSE(matches(
      "a b c d e f g h i j k l m n o p q",
      {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"}));
}

TEST(WorkloadType, ImagePatternsAreSubstringsIgnoringCase) {
  EXPECT_TRUE(ImageMatches("vllm", "docker.io/VLLM/vllm-openai:v0.5.0"));
  EXPECT_TRUE(ImageMatches("nvcr.io/nim/", "nvcr.io/nim/meta/llama3-8b-instruct:1.0.0"));
  EXPECT_FALSE(ImageMatches("nvcr.io/nim/", "nvcr.io/nvidia/pytorch:24.05-py3"));
  EXPECT_FALSE(ImageMatches("ollama", "olla"));
  EXPECT_TRUE(ImageMatches("", "anything"));
}

// Every row of the built-in table names a known type, something to match, and single-spaced
// words, as the policy reader would have made them.
TEST(WorkloadType, BuiltInTableIsWellFormed) {
  for (const BuiltInWorkloadPattern& p : BuiltInWorkloadPatterns()) {
    EXPECT_TRUE(p.type == "inference" || p.type == "training" || p.type == "development") << p.type;
    EXPECT_FALSE(p.image.empty() && p.command.empty());
    EXPECT_EQ(p.command.find("  "), std::string_view::npos) << p.command;
    EXPECT_FALSE(p.command.starts_with(' ') || p.command.ends_with(' ')) << p.command;
    for (char c : p.image) EXPECT_FALSE(c >= 'A' && c <= 'Z') << p.image;
  }
}

}  // namespace
}  // namespace gpuadmit
