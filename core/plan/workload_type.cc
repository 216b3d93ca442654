#include "core/plan/workload_type.h"

#include <algorithm>
#include <array>
#include <optional>

namespace gpuadmit {
namespace {

// The built-in table. Commands first: what a container runs says more than what it
// was built from. Each entry is what the project's own documentation starts the server or
// launcher with; tests/core/plan/workload_type_test.cc holds a real command line or image for
// each.
constexpr BuiltInWorkloadPattern kBuiltIn[] = {
    // Inference servers.
    {"inference", "", "vllm serve"},                // vLLM's CLI
    {"inference", "", "-m vllm.entrypoints.*"},     // python -m vllm.entrypoints.openai.api_server
    {"inference", "", "-m sglang.launch_server"},   // SGLang
    {"inference", "", "tritonserver"},              // NVIDIA Triton
    {"inference", "", "text-generation-launcher"},  // Hugging Face TGI
    {"inference", "", "torchserve"},                // TorchServe: torchserve --start
    {"inference", "", "serve run"},                 // Ray Serve's CLI
    {"inference", "", "ollama serve"},              // Ollama
    {"inference", "", "llama-server"},              // llama.cpp's server
    // Training launchers.
    {"training", "", "torchrun"},
    {"training", "", "-m torch.distributed.*"},  // torch.distributed.run and .launch
    {"training", "", "deepspeed"},
    {"training", "", "accelerate launch"},
    {"training", "", "horovodrun"},
    {"training", "", "mpirun ... python*"},
    {"training", "", "mpiexec ... python*"},
    // Development servers.
    {"development", "", "jupyter lab"},
    {"development", "", "jupyter notebook"},
    {"development", "", "jupyter-lab"},
    {"development", "", "jupyter-notebook"},
    {"development", "", "jupyterhub-singleuser"},
    {"development", "", "start-notebook.*"},  // the Jupyter Docker Stacks' start-notebook.sh/.py
    {"development", "", "code-server"},
    // Images, for containers that keep their image's entrypoint.
    {"inference", "vllm", ""},                       // vllm/vllm-openai
    {"inference", "sglang", ""},                     // lmsysorg/sglang
    {"inference", "tritonserver", ""},               // nvcr.io/nvidia/tritonserver
    {"inference", "text-generation-inference", ""},  // ghcr.io/huggingface/...
    {"inference", "torchserve", ""},                 // pytorch/torchserve
    {"inference", "ollama", ""},                     // ollama/ollama
    {"inference", "llama.cpp:server", ""},           // ghcr.io/ggml-org/llama.cpp:server-cuda
    {"inference", "nvcr.io/nim/", ""},               // NVIDIA NIM
    {"development", "jupyter", ""},      // jupyter/*-notebook, kubeflownotebookswg/jupyter-*
    {"development", "code-server", ""},  // codercom/code-server
    {"development", "codeserver", ""},   // kubeflownotebookswg/codeserver-python
};

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// A command pattern split into its words, at most N of them (`fits` false beyond).
template <size_t N>
struct PatternWords {
  std::array<std::string_view, N> words{};
  size_t size = 0;
  bool fits = true;

  constexpr PatternWords() = default;
  constexpr explicit PatternWords(std::string_view pattern) {
    for (size_t at = 0; at < pattern.size();) {
      size_t end = pattern.find(' ', at);
      if (end == std::string_view::npos) end = pattern.size();
      if (size == N) {
        fits = false;
        return;
      }
      words[size++] = pattern.substr(at, end - at);
      at = end + 1;
    }
  }
  std::span<const std::string_view> view() const { return {words.data(), size}; }
};

// The built-in table's command patterns, split at compile time: a review splits none of them.
constexpr size_t kBuiltInMaxWords = 4;
using BuiltInWords = PatternWords<kBuiltInMaxWords>;

constexpr std::array<BuiltInWords, std::size(kBuiltIn)> SplitBuiltIn() {
  std::array<BuiltInWords, std::size(kBuiltIn)> out;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = BuiltInWords(kBuiltIn[i].command);
  }
  return out;
}

constexpr std::array<BuiltInWords, std::size(kBuiltIn)> kBuiltInWords = SplitBuiltIn();
static_assert(std::all_of(kBuiltInWords.begin(), kBuiltInWords.end(),
                          [](const BuiltInWords& w) { return w.fits; }),
              "a built-in command pattern has more than kBuiltInMaxWords words");

// Whether one word of a command line is the pattern's word: equal, or a path ending in it, a
// trailing `*` making either a prefix match. The common case, no `*`, is a suffix compare and a
// look at the byte before it.
bool WordMatches(std::string_view pattern, std::string_view word) {
  if (!pattern.ends_with('*')) {
    if (!word.ends_with(pattern)) return false;
    if (word.size() == pattern.size()) return true;
    return word[word.size() - pattern.size() - 1] == '/' &&
           pattern.find('/') == std::string_view::npos;
  }
  pattern.remove_suffix(1);
  if (word.starts_with(pattern)) return true;
  if (pattern.find('/') != std::string_view::npos) return false;
  const size_t slash = word.rfind('/');
  return slash != std::string_view::npos && word.substr(slash + 1).starts_with(pattern);
}

// CommandMatches over a pattern already split into words.
bool WordsMatch(std::span<const std::string_view> pattern, std::span<const std::string> words) {
  // A glob over words with an implied `...` at both ends: on a mismatch, the last `...` seen
  // takes one more word and the words after it are tried again. Linear for one `...`, and
  // correct for more, since a gap that took fewer words leaves more for what follows.
  size_t p = 0;
  size_t w = 0;
  size_t resume_p = 0;
  size_t resume_w = 0;
  while (p < pattern.size()) {
    if (pattern[p] == "...") {
      resume_p = ++p;
      resume_w = w;
      continue;
    }
    if (w < words.size() && WordMatches(pattern[p], words[w])) {
      ++p;
      ++w;
      continue;
    }
    if (resume_w >= words.size()) return false;
    p = resume_p;
    w = ++resume_w;
  }
  return true;
}

// The index of the first container matching the pattern, nullopt when none does.
std::optional<size_t> FirstMatch(std::string_view image, std::span<const std::string_view> command,
                                 std::span<const ContainerLaunch> containers) {
  for (size_t i = 0; i < containers.size(); ++i) {
    if (ImageMatches(image, containers[i].image) && WordsMatch(command, containers[i].words)) {
      return i;
    }
  }
  return std::nullopt;
}

std::string Why(std::string_view image, std::string_view command, const ContainerLaunch& c) {
  std::string why = "detected from";
  if (!image.empty()) why.append(" image ").append(c.image);
  if (!image.empty() && !command.empty()) why.append(" and");
  if (!command.empty()) {
    why.append(" command \"").append(command).append("\" in container ").append(c.name);
  }
  return why;
}

// The answer for a matched pattern: "unknown" is no type.
DetectedWorkloadType Detected(std::string_view type, std::string why) {
  return {type == "unknown" ? std::string() : std::string(type), std::move(why)};
}

}  // namespace

std::span<const BuiltInWorkloadPattern> BuiltInWorkloadPatterns() { return kBuiltIn; }

bool CommandMatches(std::string_view pattern, std::span<const std::string> words) {
  PatternWords<kMaxCommandPatternWords> split(pattern);
  return split.fits && WordsMatch(split.view(), words);
}

bool ImageMatches(std::string_view pattern, std::string_view image) {
  if (image.find(pattern) != std::string_view::npos) return true;
  // Repository names are lower case; only a tag may not be. Compare folded only then.
  if (std::none_of(image.begin(), image.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return false;
  }
  for (size_t start = 0; start + pattern.size() <= image.size(); ++start) {
    size_t k = 0;
    while (k < pattern.size() && Lower(image[start + k]) == pattern[k]) ++k;
    if (k == pattern.size()) return true;
  }
  return false;
}

DetectedWorkloadType DetectWorkloadType(std::span<const ContainerLaunch> containers,
                                        const WorkloadDetectionPolicy& policy) {
  for (size_t i = 0; i < policy.patterns.size(); ++i) {
    const WorkloadPattern& p = policy.patterns[i];
    PatternWords<kMaxCommandPatternWords> command(p.command);
    if (!command.fits) continue;  // the policy reader refuses such a pattern
    if (auto found = FirstMatch(p.image, command.view(), containers)) {
      return Detected(p.type, Why(p.image, p.command, containers[*found]) +
                                  " (workloadDetection.patterns[" + std::to_string(i) + "])");
    }
  }
  for (size_t i = 0; i < std::size(kBuiltIn); ++i) {
    const BuiltInWorkloadPattern& p = kBuiltIn[i];
    if (auto found = FirstMatch(p.image, kBuiltInWords[i].view(), containers)) {
      return Detected(p.type, Why(p.image, p.command, containers[*found]));
    }
  }
  return {};
}

}  // namespace gpuadmit
