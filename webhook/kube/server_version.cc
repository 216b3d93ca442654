#include "webhook/kube/server_version.h"

#include <cctype>

#include "core/json/json_fields.h"
#include "core/json/json_reader.h"

namespace gpuadmit {
namespace {

// The leading digits of `s` ("30+" -> 30); -1 when it starts with none.
int LeadingNumber(std::string_view s) {
  int n = 0;
  size_t i = 0;
  for (; i < s.size() && i < 6 && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    n = n * 10 + (s[i] - '0');
  }
  return i == 0 ? -1 : n;
}

}  // namespace

Result<ServerVersion> ParseServerVersion(std::string_view body) {
  auto doc = ParseJson(body);
  if (!doc.ok() || !doc.value().is_object()) {
    return Error{"the /version answer is not a JSON object: " + std::string(body.substr(0, 120))};
  }
  ServerVersion v;
  v.git = StringAt(doc.value(), {"gitVersion"});
  v.major = LeadingNumber(StringAt(doc.value(), {"major"}));
  v.minor = LeadingNumber(StringAt(doc.value(), {"minor"}));
  if (v.major < 0 || v.minor < 0) {
    return Error{"the /version answer has no numeric major and minor (gitVersion \"" + v.git +
                 "\")"};
  }
  return v;
}

Result<ServerVersion> ReadServerVersion(KubeClient& client) {
  auto response = client.Send("GET", "/version");
  if (!response.ok()) return Error{"GET /version: " + response.error().message};
  if (response.value().status != 200) {
    return Error{"GET /version: HTTP " + std::to_string(response.value().status) + ": " +
                 response.value().body.substr(0, 200)};
  }
  return ParseServerVersion(response.value().body);
}

}  // namespace gpuadmit
