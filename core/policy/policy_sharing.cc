// The sharing section of the policy: which modes gpuadmit may choose, the default flow,
// and the rules that pick a mode for the pods they select; and the workloadDetection section,
// the patterns that name a pod's workload type when it declares none.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <limits>
#include <optional>

#include "core/policy/policy_sections.h"

namespace gpuadmit {
namespace {

// The workload types the workload-type annotation or label may name.
constexpr std::string_view kWorkloadTypes[] = {"training", "inference", "serving", "development",
                                               "batch"};

// {min, max}: GPU counts (whole numbers) or GPU memory sizes, each bound inclusive and optional.
void ReadRange(PolicyValidator& v, const YAML::Node& node, const std::string& path, bool memory,
               std::optional<int64_t>& min, std::optional<int64_t>& max) {
  auto bound = [&v, memory](std::optional<int64_t>* out) {
    return [&v, memory, out](const YAML::Node& n, const std::string& p) {
      int64_t value = 0;
      bool ok = memory ? v.MemoryMib(n, p, value)
                       : v.Int(n, p, int64_t{0}, std::numeric_limits<int64_t>::max(), value);
      if (ok) *out = value;
    };
  };
  v.Map(node, path, {{"min", bound(&min)}, {"max", bound(&max)}});
  if (min && max && *min > *max) v.Report(node, path + ".min must not be more than its max");
}

void ReadSelector(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                  SharingSelector& out) {
  v.Map(node, path,
        {{"namespaces", [&](const YAML::Node& n,
                            const std::string& p) { ReadNamespaceList(v, n, p, out.namespaces); }},
         {"podLabels",
          [&](const YAML::Node& n, const std::string& p) {
            v.Entries(
                n, p, [&](const YAML::Node& key, const YAML::Node& value, const std::string& at) {
                  const std::string& name = key.Scalar();
                  if (!IsLabelKey(name)) {
                    v.Report(key, p + " key \"" + name + "\" must be a label key such as team");
                  }
                  std::string text;
                  if (!v.String(value, at, text)) return;
                  if (!IsLabelValue(text)) {
                    v.Report(value, at + " must be a label value, not \"" + text + "\"");
                    return;
                  }
                  out.pod_labels.emplace(name, std::move(text));
                });
          }},
         {"workloadTypes",
          [&](const YAML::Node& n, const std::string& p) {
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              std::string type;
              if (!v.String(item, at, type)) return;
              if (std::find(std::begin(kWorkloadTypes), std::end(kWorkloadTypes), type) ==
                  std::end(kWorkloadTypes)) {
                v.Report(item, at +
                                   " must be one of training, inference, serving, development, "
                                   "batch, not \"" +
                                   type + "\"");
                return;
              }
              out.workload_types.push_back(std::move(type));
            });
          }},
         {"gpus",
          [&](const YAML::Node& n, const std::string& p) {
            ReadRange(v, n, p, /*memory=*/false, out.min_gpus, out.max_gpus);
          }},
         {"gpuMemory", [&](const YAML::Node& n, const std::string& p) {
            ReadRange(v, n, p, /*memory=*/true, out.min_memory_mib, out.max_memory_mib);
          }}});
}

void ReadRule(PolicyValidator& v, const YAML::Node& item, const std::string& at,
              SharingRule& rule) {
  bool mode_read = false;
  YAML::Node mig_profile;  // a default Node is a defined null: track presence apart
  bool has_mig_profile = false;
  v.Map(item, at,
        {{"name",
          [&](const YAML::Node& n, const std::string& p) { v.NonEmptyString(n, p, rule.name); },
          true},
         {"priority", [&](const YAML::Node& n,
                          const std::string& p) { v.Int(n, p, INT_MIN, INT_MAX, rule.priority); }},
         {"match",
          [&](const YAML::Node& n, const std::string& p) { ReadSelector(v, n, p, rule.match); }},
         {"mode",
          [&](const YAML::Node& n, const std::string& p) {
            mode_read = v.Enum<SharingMode>(n, p,
                                            {{"exclusive", SharingMode::kExclusive},
                                             {"mig", SharingMode::kMig},
                                             {"mps", SharingMode::kMps},
                                             {"time-slicing", SharingMode::kTimeSlicing}},
                                            rule.mode);
          },
          true},
         {"migProfile", [&](const YAML::Node& n, const std::string& p) {
            mig_profile = n;
            has_mig_profile = true;
            v.MigProfileName(n, p, rule.mig_profile);
          }}});
  if (mode_read && has_mig_profile && rule.mode != SharingMode::kMig) {
    v.Report(mig_profile, at + ".migProfile is only for mode mig");
  }
}

// A command pattern: its words joined by single spaces. `*` may only end a word (a prefix), and
// `...` (any words) needs a real word beside it.
void ReadCommandPattern(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                        std::string& out) {
  std::string text;
  if (!v.NonEmptyString(node, path, text)) return;
  std::string words;
  bool has_word = false;
  bool ok = true;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i])) != 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0) ++end;
    std::string_view word(text.data() + i, end - i);
    if (size_t star = word.find('*'); star != std::string_view::npos && star + 1 != word.size()) {
      v.Report(node, path + " word \"" + std::string(word) +
                         "\": * may only end a word (a prefix, as in python*)");
      ok = false;
    }
    if (word != "...") has_word = true;
    if (!words.empty()) words += ' ';
    words += word;
    i = end;
  }
  if (!has_word) {
    v.Report(node, path + " needs a word besides \"...\"");
    ok = false;
  }
  if (size_t n = std::count(words.begin(), words.end(), ' ') + 1; n > kMaxCommandPatternWords) {
    v.Report(node, path + " has " + std::to_string(n) + " words; at most " +
                       std::to_string(kMaxCommandPatternWords) + " are allowed");
    ok = false;
  }
  if (ok) out = std::move(words);
}

void ReadWorkloadPattern(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                         WorkloadPattern& out) {
  bool has_match = false;
  v.Map(item, at,
        {{"type",
          [&](const YAML::Node& n, const std::string& p) {
            std::string type;
            if (!v.String(n, p, type)) return;
            if (type != "unknown" && std::find(std::begin(kWorkloadTypes), std::end(kWorkloadTypes),
                                               type) == std::end(kWorkloadTypes)) {
              v.Report(n, p +
                              " must be one of training, inference, serving, development, batch, "
                              "unknown, not \"" +
                              type + "\"");
              return;
            }
            out.type = std::move(type);
          },
          true},
         {"image",
          [&](const YAML::Node& n, const std::string& p) {
            has_match = true;
            std::string image;
            if (!v.NonEmptyString(n, p, image)) return;
            std::transform(image.begin(), image.end(), image.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            out.image = std::move(image);
          }},
         {"command", [&](const YAML::Node& n, const std::string& p) {
            has_match = true;
            ReadCommandPattern(v, n, p, out.command);
          }}});
  if (item.IsMap() && !has_match) v.Report(item, at + " needs an image, a command or both");
}

}  // namespace

void ReadWorkloadDetection(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                           WorkloadDetectionPolicy& out) {
  v.Map(node, path,
        {{"enabled", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.enabled); }},
         {"patterns", [&](const YAML::Node& n, const std::string& p) {
            out.patterns.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              WorkloadPattern pattern;
              ReadWorkloadPattern(v, item, at, pattern);
              out.patterns.push_back(std::move(pattern));
            });
          }}});
}

void ReadSharing(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                 SharingPolicy& out) {
  v.Map(node, path,
        {{"enabled", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.enabled); }},
         {"defaultFlow",
          [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.default_flow); }},
         {"migBelow",
          [&](const YAML::Node& n, const std::string& p) { v.MemoryMib(n, p, out.mig_below_mib); }},
         {"modes",
          [&](const YAML::Node& n, const std::string& p) {
            v.Map(n, p,
                  {{"mig", [&](const YAML::Node& m,
                               const std::string& mp) { v.Bool(m, mp, out.enable_mig); }},
                   {"mps", [&](const YAML::Node& m,
                               const std::string& mp) { v.Bool(m, mp, out.enable_mps); }},
                   {"timeSlicing", [&](const YAML::Node& m, const std::string& mp) {
                      v.Bool(m, mp, out.enable_time_slicing);
                    }}});
          }},
         {"optIn", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.opt_in); }},
         {"mps",
          [&](const YAML::Node& n, const std::string& p) {
            v.Map(n, p,
                  {{"activeThreadPercentage",
                    [&](const YAML::Node& m, const std::string& mp) {
                      v.Int(m, mp, 1, 100, out.mps_active_thread_percentage);
                    }},
                   {"memoryLimit",
                    [&](const YAML::Node& m, const std::string& mp) {
                      v.MemoryMib(m, mp, out.mps_memory_limit_mib);
                    }},
                   // 48: the most clients an MPS server serves per GPU (Volta and later).
                   {"maxClients", [&](const YAML::Node& m, const std::string& mp) {
                      v.Int(m, mp, 1, 48, out.mps_max_clients);
                    }}});
          }},
         {"rules", [&](const YAML::Node& n, const std::string& p) {
            out.rules.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              SharingRule rule;
              ReadRule(v, item, at, rule);
              auto first = std::find_if(out.rules.begin(), out.rules.end(),
                                        [&](const SharingRule& o) { return o.name == rule.name; });
              if (!rule.name.empty() && first != out.rules.end()) {
                v.Report(item, at + ".name \"" + rule.name + "\" is already used by " + p + "[" +
                                   std::to_string(first - out.rules.begin()) + "]");
              }
              out.rules.push_back(std::move(rule));
            });
            // Highest priority first; ties keep the file's order.
            std::stable_sort(
                out.rules.begin(), out.rules.end(),
                [](const SharingRule& a, const SharingRule& b) { return a.priority > b.priority; });
          }}});
}

}  // namespace gpuadmit
