// The queue section of the policy, waiting for GPUs: whether GPU pods that fit
// nowhere wait gated, how long at most, and in which namespaces. Durations are written as Go
// and Kubernetes write them ("5m", "1h30m").
//
//   queue:
//     enabled: false
//     timeout: 5m
//     namespaces: [ml-training]
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "core/policy/policy_sections.h"

namespace gpuadmit {
namespace {

// 1 s to 24 h: below a second the gate is lifted before the scheduler saw the pod; above a day a
// pod is better refused than held, and the leader's timers need no more.
constexpr int64_t kMinQueueTimeoutSeconds = 1;
constexpr int64_t kMaxQueueTimeoutSeconds = 24 * 3600;

// "1h30m10s" -> 5410; nullopt for anything but h/m/s units over whole numbers.
std::optional<int64_t> ParseDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c) != 0; })) {
    if (s.size() > 9) return std::nullopt;  // past 24 h anyway; keeps the sum from overflowing
    return std::stoll(std::string(s));
  }
  int64_t total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
    if (i == start || i == s.size() || i - start > 9) return std::nullopt;
    int64_t n = std::stoll(std::string(s.substr(start, i - start)));
    switch (s[i++]) {
      case 'h':
        total += n * 3600;
        break;
      case 'm':
        total += n * 60;
        break;
      case 's':
        total += n;
        break;
      default:
        return std::nullopt;
    }
  }
  return total;
}

}  // namespace

bool ReadDurationSeconds(PolicyValidator& v, const YAML::Node& node, const std::string& path,
                         int64_t min_seconds, int64_t max_seconds, int64_t& out) {
  std::optional<int64_t> seconds;
  if (node.IsScalar()) seconds = ParseDuration(node.Scalar());
  if (!seconds) {
    v.Report(node, path + " must be a duration such as 90s, 5m or 1h30m" +
                       (node.IsScalar() ? ", not \"" + node.Scalar() + "\"" : ""));
    return false;
  }
  if (*seconds < min_seconds || *seconds > max_seconds) {
    v.Report(node, path + " must be between " + std::to_string(min_seconds) + "s and " +
                       std::to_string(max_seconds) + "s, not " + std::to_string(*seconds) + "s");
    return false;
  }
  out = *seconds;
  return true;
}

void ReadQueue(const YAML::Node& node, const std::string& path, PolicyValidator& v,
               QueuePolicy& out) {
  v.Map(node, path,
        {{"enabled", [&](const YAML::Node& n, const std::string& p) { v.Bool(n, p, out.enabled); }},
         {"timeout",
          [&](const YAML::Node& n, const std::string& p) {
            ReadDurationSeconds(v, n, p, kMinQueueTimeoutSeconds, kMaxQueueTimeoutSeconds,
                                out.timeout_seconds);
          }},
         {"namespaces", [&](const YAML::Node& n, const std::string& p) {
            ReadNamespaceList(v, n, p, out.namespaces);
          }}});
}

bool QueuePolicy::Queues(std::string_view ns) const {
  return enabled && (namespaces.empty() ||
                     std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end());
}

}  // namespace gpuadmit
