// KubeClient: KubeApi over HTTPS with cpp-httplib, configured from a KubeConfig. One kept-alive
// TLS connection per client (each reflector owns its client), TCP_NODELAY, `Accept:
// application/json` without compression, the server certificate verified with OpenSSL against
// the configured CA alone, as client-go does (httplib would trust the system roots too), a
// client certificate when configured, and `Authorization: Bearer` with the token file re-read on
// every request so that rotated service-account tokens are picked up at once. Paths go out as
// given: the caller percent-encodes query values (a continue token, a fieldSelector).
//
//   auto client = KubeClient::Create(config.value());
//   auto page = client.value()->List("/api/v1/nodes?limit=500");
//
// Thread safety: List, Watch and Send from one thread at a time; Cancel from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/result.h"
#include "webhook/kube/kube_api.h"
#include "webhook/kube/kube_config.h"

namespace httplib {
class SSLClient;
}

namespace gpuadmit {

class ClusterTls;

struct KubeClientOptions {
  // 5 s to connect and finish the TLS handshake: the apiserver is one hop away.
  std::chrono::milliseconds connect_timeout{5000};
  // 60 s of silence ends a List: the apiserver's own request timeout for non-watch calls.
  std::chrono::milliseconds list_read_timeout{60000};
  // A watch may be silent for its whole timeoutSeconds (bookmarks are not guaranteed), so its
  // read timeout is that plus this margin for the server's closing of the stream.
  std::chrono::milliseconds watch_read_margin{30000};
  // A watch without timeoutSeconds lasts up to twice the apiserver's --min-request-timeout
  // (1800 s).
  std::chrono::seconds watch_default_timeout{3600};
};

class KubeClient final : public KubeApi {
 public:
  // A client for `config`. Errors name the server URL, or the PEM or token file at fault (with
  // its origin in the kubeconfig). Connects lazily, on the first request.
  static Result<std::unique_ptr<KubeClient>> Create(const KubeConfig& config,
                                                    const KubeClientOptions& options = {});
  ~KubeClient() override;

  Result<KubeResponse> List(const std::string& path_and_query) override;
  // Reads timeoutSeconds from the query for its read timeout. A trailing line without a newline
  // at a clean end of stream is delivered too. After Cancel(), returns the HTTP status if the
  // response had begun, else Error "cancelled".
  Result<int> Watch(const std::string& path_and_query,
                    const std::function<bool(std::string_view event)>& on_event) override;
  // One request with a body (POST, PUT, PATCH) or none (GET), answered whole: for single objects
  // such as the leader election Lease or a Pod's scheduling gates. `content_type` is the body's:
  // a PATCH passes its patch type, e.g. "application/merge-patch+json". Read timeout:
  // list_read_timeout. An HTTP error status is a response; Error is for transport failures, as
  // List.
  Result<KubeResponse> Send(std::string_view method, const std::string& path,
                            const std::string& json_body = "",
                            std::string_view content_type = "application/json");
  // Ends the request in progress at once, whatever its stage (connect, TLS handshake, a blocked
  // read), by shutting its socket down. The client stays cancelled: later calls return Error
  // "cancelled" at once, so a Cancel racing the start of a call is never lost.
  void Cancel() override;

 private:
  KubeClient() = default;
  // The token to send: the literal one, or the token file's current content (its last good
  // content while it cannot be read).
  std::string BearerToken();
  // GET `path_and_query`; `on_body` sees the status and each piece of the body as it arrives,
  // and may stop the transfer. The status, or Error for transport failures; after Cancel(),
  // the status if the response had begun, else Error "cancelled".
  Result<int> Get(const std::string& path_and_query, std::chrono::milliseconds read_timeout,
                  const std::function<bool(int status, std::string_view piece)>& on_body);
  // httplib's hook for each new socket: keeps a duplicate of it for Cancel.
  void AdoptSocket(int fd);

  KubeClientOptions options_;
  std::string base_url_;     // for messages: "https://host:port"
  std::string path_prefix_;  // from a server URL with a path, e.g. Rancher's "/k8s/clusters/c-1"
  std::string token_;        // the literal token, or the last one read from token_file_
  std::string token_file_;
  std::unique_ptr<ClusterTls> tls_;
  std::unique_ptr<httplib::SSLClient> http_;
  std::atomic<bool> cancelled_{false};
  std::mutex socket_mu_;  // guards socket_dup_ between AdoptSocket and Cancel
  int socket_dup_ = -1;   // a duplicate descriptor of httplib's current socket, ours to close
};

}  // namespace gpuadmit
