// The sections of the policy that describe the cluster's objects and devices: custom workloads,
// MIG, requirement estimation and worker defaults. Sharing and placement have their own files.
#include "core/policy/policy_sections.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/kube/mig_resource.h"
#include "core/kube/quantity.h"
#include "core/kube/workload.h"

namespace gpuadmit {
namespace {

// 7: a MIG-capable GPU (A30 to B200) has at most seven compute slices, so seven instances.
constexpr int kMaxMigInstancesPerGpu = 7;

bool IsKindName(std::string_view s) {
  return !s.empty() && std::isalpha(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

void ReadPointer(PolicyValidator& v, const YAML::Node& n, const std::string& path,
                 std::string& out) {
  std::string s;
  if (!v.String(n, path, s)) return;
  if (!IsPointerIntoObject(s)) {
    v.Report(n, path + " must be a JSON pointer such as /spec/engine, not \"" + s + "\"");
    return;
  }
  out = s;
}

void ReadWorkload(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                  CustomWorkload& w) {
  v.Map(item, at,
        {{"group",
          [&](const YAML::Node& n, const std::string& p) {
            if (v.String(n, p, w.group) && !w.group.empty() && !IsDnsSubdomain(w.group)) {
              v.Report(n, p + " must be an API group such as ome.io, not \"" + w.group + "\"");
            }
          },
          true},
         {"kind",
          [&](const YAML::Node& n, const std::string& p) {
            if (v.String(n, p, w.kind) && !IsKindName(w.kind)) {
              v.Report(n, p + " must be a kind such as InferenceService, not \"" + w.kind + "\"");
            }
          },
          true},
         {"podSpecs",
          [&](const YAML::Node& n, const std::string& p) {
            v.List(n, p, [&](const YAML::Node& spec, const std::string& sp) {
              ReadPointer(v, spec, sp, w.pod_specs.emplace_back());
            });
            if (n.IsSequence() && n.size() == 0) v.Report(n, p + " must not be empty");
          },
          true},
         {"gpuContainer",
          [&](const YAML::Node& n, const std::string& p) {
            if (v.String(n, p, w.gpu_container) && w.gpu_container.find('/') != std::string::npos) {
              v.Report(n, p + " must be a field name of the pod spec such as runner, not \"" +
                              w.gpu_container + "\"");
            }
          }},
         {"metadata",
          [&](const YAML::Node& n, const std::string& p) { ReadPointer(v, n, p, w.metadata); }},
         {"pinNode",
          [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, w.pin_node); }}});
}

void ReadMigProduct(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                    MigProductSpec& spec) {
  v.Map(item, at,
        {{"product",
          [&](const YAML::Node& n, const std::string& p) { v.NonEmptyString(n, p, spec.product); },
          true},
         {"profiles",
          [&](const YAML::Node& n, const std::string& p) {
            v.Entries(
                n, p, [&](const YAML::Node& key, const YAML::Node& value, const std::string&) {
                  MigCatalogProfile profile{key.Scalar(), 0};
                  if (!ParseMigResource(std::string(kMigResourcePrefix) + profile.name)) {
                    v.Report(key, p + " key \"" + profile.name +
                                      "\" must be a MIG profile such as 1g.10gb or 3g.40gb");
                  }
                  v.Int(value, p + "." + profile.name, 1, kMaxMigInstancesPerGpu, profile.per_gpu);
                  spec.profiles.push_back(std::move(profile));
                });
            if (n.IsMap() && n.size() == 0) v.Report(n, p + " must not be empty");
          },
          true}});
}

void ReadMigChain(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                  MigChain& chain) {
  YAML::Node to_node;
  v.Map(item, at,
        {{"from",
          [&](const YAML::Node& n, const std::string& p) { v.MigProfileName(n, p, chain.from); },
          true},
         {"to",
          [&](const YAML::Node& n, const std::string& p) {
            to_node = n;
            v.List(n, p, [&](const YAML::Node& step, const std::string& sp) {
              std::string name;
              if (!v.MigProfileName(step, sp, name)) return;
              if (std::find(chain.to.begin(), chain.to.end(), name) != chain.to.end()) {
                v.Report(step, sp + " \"" + name + "\" appears twice in " + p);
              }
              chain.to.push_back(std::move(name));
            });
            if (n.IsSequence() && n.size() == 0) v.Report(n, p + " must not be empty");
          },
          true}});
  // A fallback goes down: each step must be smaller than what the pod asked for.
  auto from = ParseMigResource(std::string(kMigResourcePrefix) + chain.from);
  if (!from || !to_node.IsSequence()) return;
  for (size_t i = 0; i < to_node.size(); ++i) {
    if (!to_node[i].IsScalar()) continue;
    const std::string& name = to_node[i].Scalar();
    auto step = ParseMigResource(std::string(kMigResourcePrefix) + name);
    if (step && !step->SmallerThan(*from)) {
      v.Report(to_node[i], at + ".to[" + std::to_string(i) + "] \"" + name +
                               "\" is not smaller than \"" + chain.from +
                               "\": a fallback only goes to smaller profiles");
    }
  }
}

void ReadToleration(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                    Toleration& t) {
  v.Map(item, at,
        {{"key",
          [&](const YAML::Node& n, const std::string& p) {
            if (v.String(n, p, t.key) && !t.key.empty() && !IsLabelKey(t.key)) {
              v.Report(n, p + " must be a label key such as nvidia.com/gpu, not \"" + t.key + "\"");
            }
          }},
         {"operator",
          [&](const YAML::Node& n, const std::string& p) {
            v.Enum<std::string>(n, p, {{"Equal", "Equal"}, {"Exists", "Exists"}}, t.op);
          }},
         {"value", [&](const YAML::Node& n, const std::string& p) { v.String(n, p, t.value); }},
         {"effect", [&](const YAML::Node& n, const std::string& p) {
            v.Enum<std::string>(n, p,
                                {{"NoSchedule", "NoSchedule"},
                                 {"PreferNoSchedule", "PreferNoSchedule"},
                                 {"NoExecute", "NoExecute"}},
                                t.effect);
          }}});
  // The apiserver's own rules for a toleration.
  if (t.op == "Exists" && !t.value.empty()) {
    v.Report(item, at + ".value must be empty when operator is Exists");
  }
  if (t.op == "Equal" && t.key.empty() && item.IsMap()) {
    v.Report(item, at + ".key is required unless operator is Exists");
  }
}

}  // namespace

void ReadWorkloads(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                   std::vector<CustomWorkload>& out) {
  std::vector<CustomWorkload> workloads;
  v.List(node, path, [&](const YAML::Node& item, const std::string& at) {
    CustomWorkload w;
    ReadWorkload(v, item, at, w);
    if (!w.kind.empty()) {
      std::string name = (w.group.empty() ? "" : w.group + "/") + w.kind;
      auto first = std::find_if(workloads.begin(), workloads.end(), [&](const CustomWorkload& o) {
        return o.group == w.group && o.kind == w.kind;
      });
      if (first != workloads.end()) {
        v.Report(item, at + " declares " + name + " again (see " + path + "[" +
                           std::to_string(first - workloads.begin()) + "])");
      } else if (IsKnownKind({w.group, "", w.kind})) {
        v.Report(item, at + ": " + name + " is built in and needs no entry");
      }
    }
    workloads.push_back(std::move(w));
  });
  out = std::move(workloads);
}

void ReadMig(const YAML::Node& node, const std::string& path, PolicyValidator& v, MigPolicy& out) {
  v.Map(
      node, path,
      {{"fallback", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.fallback); }},
       {"onExhausted",
        [&](const YAML::Node& n, const std::string& p) {
          v.Enum<ExhaustedAction>(
              n, p, {{"warn", ExhaustedAction::kWarn}, {"deny", ExhaustedAction::kDeny}},
              out.on_exhausted);
        }},
       {"products",
        [&](const YAML::Node& n, const std::string& p) {
          out.products.clear();
          v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
            MigProductSpec spec;
            ReadMigProduct(v, item, at, spec);
            auto first =
                std::find_if(out.products.begin(), out.products.end(),
                             [&](const MigProductSpec& o) { return o.product == spec.product; });
            if (!spec.product.empty() && first != out.products.end()) {
              v.Report(item, at + ".product \"" + spec.product + "\" is already described by " + p +
                                 "[" + std::to_string(first - out.products.begin()) + "]");
            }
            out.products.push_back(std::move(spec));
          });
        }},
       {"chains", [&](const YAML::Node& n, const std::string& p) {
          out.chains.clear();
          v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
            MigChain chain;
            ReadMigChain(v, item, at, chain);
            auto first = std::find_if(out.chains.begin(), out.chains.end(),
                                      [&](const MigChain& o) { return o.from == chain.from; });
            if (!chain.from.empty() && first != out.chains.end()) {
              v.Report(item, at + ".from \"" + chain.from + "\" already has a chain: " + p + "[" +
                                 std::to_string(first - out.chains.begin()) + "]");
            }
            out.chains.push_back(std::move(chain));
          });
        }}});
}

void ReadRequirements(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                      RequirementsPolicy& out) {
  v.Map(node, path,
        {{"gpuCount",
          [&](const YAML::Node& n, const std::string& p) {
            v.Enum<GpuCountAction>(n, p,
                                   {{"off", GpuCountAction::kOff},
                                    {"warn", GpuCountAction::kWarn},
                                    {"fill", GpuCountAction::kFill},
                                    {"correct", GpuCountAction::kCorrect}},
                                   out.gpu_count);
          }},
         {"modelMemory",
          [&](const YAML::Node& n, const std::string& p) {
            out.model_memory.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              ModelMemoryRule rule;
              v.Map(item, at,
                    {{"contains",
                      [&](const YAML::Node& c, const std::string& cp) {
                        v.NonEmptyString(c, cp, rule.contains);
                      },
                      true},
                     {"memory",
                      [&](const YAML::Node& m, const std::string& mp) {
                        v.MemoryMib(m, mp, rule.memory_mib);
                      },
                      true},
                     {"splitOver",
                      [&](const YAML::Node& s, const std::string& sp) {
                        v.Int(s, sp, 1, 64, rule.split_over);  // 64: GPUs a model spans at most
                      },
                      false}});
              // First match wins: a later rule with the same pattern could never apply.
              auto first = std::find_if(out.model_memory.begin(), out.model_memory.end(),
                                        [&](const ModelMemoryRule& o) {
                                          return Lower(o.contains) == Lower(rule.contains);
                                        });
              if (!rule.contains.empty() && first != out.model_memory.end()) {
                v.Report(item, at + ".contains \"" + rule.contains + "\" repeats " + p + "[" +
                                   std::to_string(first - out.model_memory.begin()) +
                                   "]; the first match wins, so this one never applies");
              }
              out.model_memory.push_back(std::move(rule));
            });
          }},
         {"defaultModelMemory", [&](const YAML::Node& n, const std::string& p) {
            v.MemoryMib(n, p, out.default_model_memory_mib);
          }}});
}

// {cpu: 4000m, memory: 8Gi} of `section`: each a positive Kubernetes quantity.
void ReadComputeQuantities(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                           const char* section, std::vector<ResourceDefault>& out) {
  auto quantity = [&](const char* resource) {
    return [&v, &out, section, resource](const YAML::Node& n, const std::string& p) {
      std::string text;
      if (!v.String(n, p, text)) return;
      auto milli = ParseQuantityMilli(text);
      if (!milli.ok() || milli.value() <= 0) {
        v.Report(n, p + " must be a positive quantity such as 4000m, 8 or 16Gi, not \"" + text +
                        "\"");
        return;
      }
      out.push_back({section, resource, text, milli.value()});
    };
  };
  v.Map(node, path, {{"cpu", quantity("cpu")}, {"memory", quantity("memory")}});
}

void ReadGpuTypeResources(PolicyValidator& v, const YAML::Node& item, const std::string& at,
                          GpuTypeResources& out) {
  v.Map(item, at,
        {{"gpuType",
          [&](const YAML::Node& n, const std::string& p) { v.NonEmptyString(n, p, out.gpu_type); },
          true},
         {"requests",
          [&](const YAML::Node& n, const std::string& p) {
            ReadComputeQuantities(v, n, p, "requests", out.defaults);
          }},
         {"limits", [&](const YAML::Node& n, const std::string& p) {
            ReadComputeQuantities(v, n, p, "limits", out.defaults);
          }}});
  for (const ResourceDefault& request : out.defaults) {
    if (request.section != "requests") continue;
    for (const ResourceDefault& limit : out.defaults) {
      if (limit.section == "limits" && limit.resource == request.resource &&
          request.milli > limit.milli) {
        v.Report(item, at + ": requests." + request.resource + " " + request.quantity +
                           " is above limits." + limit.resource + " " + limit.quantity);
      }
    }
  }
}

void ReadWorkerDefaults(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                        WorkerDefaults& out) {
  v.Map(node, path,
        {{"resources",
          [&](const YAML::Node& n, const std::string& p) {
            out.resources.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              ReadGpuTypeResources(v, item, at, out.resources.emplace_back());
            });
          }},
         {"tolerations",
          [&](const YAML::Node& n, const std::string& p) {
            out.tolerations.clear();
            v.List(n, p, [&](const YAML::Node& item, const std::string& at) {
              ReadToleration(v, item, at, out.tolerations.emplace_back());
            });
          }},
         {"shmSize", [&](const YAML::Node& n, const std::string& p) {
            // Kept as written: it becomes the /dev/shm emptyDir's sizeLimit, where a bare number
            // means bytes; a unit is required so "2048" is not mistaken for MiB.
            std::string size;
            if (!v.String(n, p, size)) return;
            auto bytes = ParseQuantityMilli(size);
            bool has_unit = !size.empty() && std::isalpha(static_cast<unsigned char>(size.back()));
            if (!bytes.ok() || bytes.value() <= 0 || !has_unit) {
              v.Report(n, p + " must be a positive size with a unit such as 2Gi or 512Mi, not \"" +
                              size + "\"");
              return;
            }
            out.shm_size = size;
          }}});
}

void ReadJobDefaults(const YAML::Node& node, const std::string& path, PolicyValidator& v,
                     JobDefaults& out) {
  // The ranges the apiserver validates: int32 fields but activeDeadlineSeconds, and a deadline
  // of at least one second.
  constexpr int64_t kInt32Max = 2147483647;
  auto field = [&](int64_t min, int64_t max, std::optional<int64_t>& to) {
    return [&v, &to, min, max](const YAML::Node& n, const std::string& p) {
      v.Int(n, p, min, max, to);
    };
  };
  v.Map(node, path,
        {{"ttlSecondsAfterFinished", field(0, kInt32Max, out.ttl_seconds_after_finished)},
         {"activeDeadlineSeconds", field(1, std::numeric_limits<int64_t>::max(), out.active_deadline_seconds)},
         {"backoffLimit", field(0, kInt32Max, out.backoff_limit)}});
}

}  // namespace gpuadmit
