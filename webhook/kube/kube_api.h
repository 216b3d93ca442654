// KubeApi: the Kubernetes API as the inventory needs it, two calls wide, so the reflector can be
// tested against a fake and the real client (kube_client.h) stays small.
//
//   auto page = api.List("/api/v1/pods?limit=500");
//   auto end = api.Watch("/api/v1/pods?watch=1&resourceVersion=42&allowWatchBookmarks=true",
//                        [](std::string_view line) { ...; return true; });
//
// Thread safety: List and Watch are called from one reflector thread at a time per instance;
// Cancel may be called from any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuadmit {

struct KubeResponse {
  int status = 0;    // HTTP status
  std::string body;  // the whole body (a List page, or a Status on errors)
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  // GET `path_and_query` (e.g. "/api/v1/nodes?limit=500&continue=..."). An HTTP error status is
  // a response, not an Error; Error is for transport failures (connect, TLS, timeout, reset).
  virtual Result<KubeResponse> List(const std::string& path_and_query) = 0;

  // GET a watch stream and call `on_event` with each newline-delimited WatchEvent, whole, in
  // order. Returns the HTTP status when the stream ends (the server closed it, `on_event`
  // returned false, or Cancel() was called); a non-200 status comes with no events. Error is for
  // transport failures, including a connection dropped mid-stream.
  virtual Result<int> Watch(const std::string& path_and_query,
                            const std::function<bool(std::string_view event)>& on_event) = 0;

  // Ends a List or Watch in progress, from any thread, soon (well under a second).
  virtual void Cancel() = 0;
};

}  // namespace gpuadmit
