#include "webhook/queue/queue_event.h"

#include <fmt/format.h>

#include <ctime>
#include <string>

#include "core/json/json_fields.h"

namespace gpuadmit {
namespace {

// "2026-11-26T08:12:36Z": Event timestamps have whole seconds.
std::string Rfc3339Seconds(int64_t unix_ms) {
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace

nlohmann::json QueueEvent(const nlohmann::json& pod, std::string_view reason,
                          std::string_view message, std::string_view instance, int64_t unix_ms) {
  std::string name = StringAt(pod, {"metadata", "name"});
  std::string ns = StringAt(pod, {"metadata", "namespace"});
  std::string when = Rfc3339Seconds(unix_ms);
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", fmt::format("{}.{:x}", name, static_cast<uint64_t>(unix_ms) * 1000000)},
        {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"name", name},
        {"namespace", ns},
        {"uid", StringAt(pod, {"metadata", "uid"})},
        {"resourceVersion", StringAt(pod, {"metadata", "resourceVersion"})}}},
      {"reason", std::string(reason)},
      {"message", std::string(message)},
      {"type", "Warning"},
      {"source", {{"component", "gpuadmit"}}},
      {"reportingComponent", "gpuadmit"},
      {"reportingInstance", std::string(instance)},
      {"firstTimestamp", when},
      {"lastTimestamp", when},
      {"count", 1},
  };
}

}  // namespace gpuadmit
