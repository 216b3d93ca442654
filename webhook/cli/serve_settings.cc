#include "webhook/cli/serve_settings.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <exception>

#include "webhook/os/read_file.h"

namespace gpuadmit {
namespace {

// --leader-elect's flags into `out`; an error message for a bad command line, else "".
std::string ElectionSettings(const Flags& f, LeaderRoutingSettings& out) {
  if (f.Has("cluster")) {
    return "--leader-elect needs the Kubernetes API (--kubeconfig or in-cluster), not --cluster";
  }
  if (!f.Has("advertise")) {
    return "--leader-elect needs --advertise HOST:PORT, where the other replicas reach this one "
           "(the pod IP and the --listen port)";
  }
  std::string host;
  int port = 0;
  if (!SplitHostPort(f.Value("advertise"), host, port) || host.empty() || host == "0.0.0.0") {
    return "--advertise must be a reachable HOST:PORT, not " + f.Value("advertise");
  }
  out.advertise = f.Value("advertise");
  out.lease_namespace = f.Value("leader-election-namespace");
  if (out.lease_namespace.empty()) {  // the service account's namespace, as client-go reads it
    auto ns = ReadWholeFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
    if (ns.ok()) out.lease_namespace = ns.value();
    while (!out.lease_namespace.empty() &&
           std::isspace(static_cast<unsigned char>(out.lease_namespace.back()))) {
      out.lease_namespace.pop_back();
    }
    if (out.lease_namespace.empty()) {
      return "--leader-elect outside a pod needs --leader-election-namespace NS";
    }
  }
  out.identity = f.Value("id");
  if (out.identity.empty()) {
    out.identity = Hostname();
    if (out.identity.empty()) return "--leader-elect needs --id NAME (no hostname to default to)";
  }
  // client-go's and kube-scheduler's defaults: 15 s, 10 s, 2 s (seconds, fractions allowed).
  struct Timing {
    const char* flag;
    std::chrono::milliseconds& value;
  };
  for (Timing t : {Timing{"leader-elect-lease-duration", out.timing.lease_duration},
                   Timing{"leader-elect-renew-deadline", out.timing.renew_deadline},
                   Timing{"leader-elect-retry-period", out.timing.retry_period}}) {
    if (!f.Has(t.flag)) continue;
    double seconds = 0;
    try {
      seconds = std::stod(f.Value(t.flag));
    } catch (const std::exception&) {
      seconds = 0;
    }
    if (!(seconds > 0 && seconds <= 3600)) {
      return std::string("--") + t.flag + " must be seconds in (0, 3600], not " + f.Value(t.flag);
    }
    t.value = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  if (f.Has("leader-elect-replicas")) {
    int64_t replicas = 0;
    try {
      replicas = std::stoll(f.Value("leader-elect-replicas"));
    } catch (const std::exception&) {
      replicas = 0;
    }
    if (replicas < 1 || replicas > 1000) {
      return "--leader-elect-replicas must be a count in [1, 1000], not " +
             f.Value("leader-elect-replicas");
    }
    out.replicas = replicas;
  }
  if (!(out.timing.retry_period < out.timing.renew_deadline &&
        out.timing.renew_deadline < out.timing.lease_duration)) {
    return "leader election needs retry period < renew deadline < lease duration";
  }
  out.tls_cert = f.Value("tls-cert");
  out.tls_key = f.Value("tls-key");
  out.peer_ca = f.Value("peer-ca");
  if (out.peer_ca.empty()) {  // beside the serving pair, as cert-manager's Secret has it
    size_t slash = out.tls_cert.rfind('/');
    out.peer_ca = (slash == std::string::npos ? "" : out.tls_cert.substr(0, slash + 1)) + "ca.crt";
  }
  return "";
}

}  // namespace

std::string Hostname() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

std::string ParseServe(int argc, char** argv, ServeSettings& out) {
  Flags& f = out.flags;
  if (auto err = f.Parse(argc, argv, 0); !err.empty()) return err;
  for (const char* required : {"policy", "tls-cert", "tls-key"}) {
    if (!f.Has(required)) return std::string("--") + required + " is required";
  }
  if (f.Has("cluster") && f.Has("kubeconfig")) {
    return "--cluster and --kubeconfig are alternatives; give one";
  }
  if (f.Has("prometheus") && f.Has("dcgm-file")) {
    return "--prometheus and --dcgm-file are alternatives; give one";
  }
  if (f.Has("leader-elect")) {
    if (auto err = ElectionSettings(f, out.election); !err.empty()) return err;
  } else {
    for (const char* only :
         {"leader-election-namespace", "id", "advertise", "peer-ca", "leader-elect-lease-duration",
          "leader-elect-renew-deadline", "leader-elect-retry-period", "leader-elect-replicas"}) {
      if (f.Has(only)) return std::string("--") + only + " needs --leader-elect";
    }
  }
  if (f.Has("metrics-listen") &&
      !SplitHostPort(f.Value("metrics-listen"), out.metrics_host, out.metrics_port)) {
    return "--metrics-listen must be HOST:PORT, not " + f.Value("metrics-listen");
  }
  if (f.Has("log-level") && !ParseLogLevel(f.Value("log-level"), out.level)) {
    return "--log-level must be debug, info, warn or error";
  }
  ServerOptions& options = out.server;
  if (!SplitHostPort(f.Value("listen", "0.0.0.0:8443"), options.host, options.port)) {
    return "--listen must be HOST:PORT, not " + f.Value("listen");
  }
  if (f.Has("max-connections")) {
    try {
      options.max_connections = std::stoul(f.Value("max-connections"));
    } catch (const std::exception&) {
      return "--max-connections must be a number";
    }
  }
  if (f.Has("workers")) {
    try {
      options.worker_threads = static_cast<unsigned>(std::stoul(f.Value("workers")));
    } catch (const std::exception&) {
      return "--workers must be a number";
    }
    if (options.worker_threads == 0 || options.worker_threads > 256) {
      return "--workers must be between 1 and 256";
    }
  }
  options.cert_file = f.Value("tls-cert");
  options.key_file = f.Value("tls-key");
  options.client_ca_file = f.Value("client-ca");
  options.client_name = f.Value("client-name");
  if (!options.client_name.empty() && options.client_ca_file.empty()) {
    return "--client-name needs --client-ca";
  }
  return "";
}

}  // namespace gpuadmit
