// serve's command line: the flags, checked, and the settings the server is built from. Every
// usage error is one line naming the flag; the server is built only from settings that passed.
//
//   ServeSettings settings;
//   if (auto err = ParseServe(argc, argv, settings); !err.empty()) return UsageError("serve", err);
//
// Thread safety: none needed (parsed once, on main's thread, before anything starts).
#pragma once

#include <string>

#include "webhook/cli/flags.h"
#include "webhook/cli/leader_routing.h"
#include "webhook/server/tls_server.h"
#include "webhook/telemetry/log.h"

namespace gpuadmit {

// serve's command line, checked: what its parts are built from.
struct ServeSettings {
  Flags flags{{"policy",
               "tls-cert",
               "tls-key",
               "client-ca",
               "client-name",
               "listen",
               "cluster",
               "kubeconfig",
               "context",
               "prometheus",
               "dcgm-file",
               "metrics-listen",
               "log-level",
               "max-connections",
               "workers",
               "leader-election-namespace",
               "id",
               "advertise",
               "peer-ca",
               "leader-elect-lease-duration",
               "leader-elect-renew-deadline",
               "leader-elect-retry-period",
               "leader-elect-replicas"},
              {"leader-elect", "metrics-per-node"}};
  LeaderRoutingSettings election;  // with --leader-elect
  ServerOptions server;
  std::string metrics_host;  // with --metrics-listen
  int metrics_port = 0;
  LogLevel level = LogLevel::kInfo;
};

// This machine's hostname (the pod's name in a Deployment), "" when it has none: the default
// identity of a replica.
std::string Hostname();

// Parses argv into `out`: "" or a usage error's message.
std::string ParseServe(int argc, char** argv, ServeSettings& out);

}  // namespace gpuadmit
