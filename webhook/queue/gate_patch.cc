#include "webhook/queue/gate_patch.h"

#include "core/json/json_fields.h"
namespace gpuadmit {

bool HasGate(const nlohmann::json& pod, std::string_view gate) {
  const nlohmann::json& gates = At(pod, {"spec", "schedulingGates"});
  if (!gates.is_array()) return false;
  for (const nlohmann::json& g : gates) {
    if (StringAt(g, {"name"}) == gate) return true;
  }
  return false;
}

nlohmann::json LiftPatch(const nlohmann::json& pod, std::string_view gate,
                         const std::pair<std::string, std::string>& note, std::string_view node) {
  nlohmann::json patch = {{"metadata",
                           {{"resourceVersion", StringAt(pod, {"metadata", "resourceVersion"})},
                            {"annotations", {{note.first, note.second}}}}}};
  nlohmann::json rest = nlohmann::json::array();
  if (const nlohmann::json& gates = At(pod, {"spec", "schedulingGates"}); gates.is_array()) {
    for (const nlohmann::json& g : gates) {
      if (StringAt(g, {"name"}) != gate) rest.push_back(g);
    }
  }
  // null removes the field in a merge patch: an empty list would be stored as one.
  patch["spec"]["schedulingGates"] = rest.empty() ? nlohmann::json(nullptr) : rest;
  if (node.empty()) return patch;

  // By the node's name (a field), not its hostname label, which need not equal it.
  nlohmann::json pin = {{"key", "metadata.name"},
                        {"operator", "In"},
                        {"values", nlohmann::json::array({std::string(node)})}};
  nlohmann::json terms =
      At(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
               "nodeSelectorTerms"});
  if (!terms.is_array() || terms.empty()) {
    terms = nlohmann::json::array({{{"matchFields", nlohmann::json::array({pin})}}});
  } else {
    for (nlohmann::json& term : terms) {
      if (!term.is_object()) term = nlohmann::json::object();
      nlohmann::json& fields = term["matchFields"];
      if (!fields.is_array()) fields = nlohmann::json::array();
      fields.push_back(pin);
    }
  }
  // The merge replaces nodeSelectorTerms whole; the terms' other fields and the preferred terms
  // are untouched.
  patch["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
       ["nodeSelectorTerms"] = std::move(terms);
  return patch;
}

std::string PodPath(std::string_view ns, std::string_view name) {
  std::string path = "/api/v1/namespaces/";
  path.append(ns).append("/pods/").append(name);
  return path;
}

}  // namespace gpuadmit
