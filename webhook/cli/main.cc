// gpuadmit: a Kubernetes mutating admission webhook that places GPU workloads.
// main only dispatches to a subcommand; every part is built inside the subcommand.
#include <cstring>
#include <iostream>
#include <string_view>

#include "webhook/cli/build_info.h"
#include "webhook/cli/command_help.h"
#include "webhook/cli/commands.h"

namespace {

constexpr std::string_view kUsage =
    R"(gpuadmit: a Kubernetes mutating admission webhook for GPU workloads

Usage:
  gpuadmit serve   --policy FILE --tls-cert FILE --tls-key FILE [--client-ca FILE [--client-name N]]
                   [--listen 0.0.0.0:8443] [--metrics-listen HOST:PORT] [--metrics-per-node]
                   [--cluster FILE | --kubeconfig FILE [--context NAME] | (in-cluster)]
                   [--prometheus URL | --dcgm-file FILE]
                   [--log-level debug|info|warn|error] [--max-connections 1024] [--workers N]
                   [--leader-elect --advertise HOST:PORT [--id NAME] [--peer-ca FILE]
                    [--leader-election-namespace NS] [--leader-elect-lease-duration 15]
                    [--leader-elect-renew-deadline 10] [--leader-elect-retry-period 2]
                    [--leader-elect-replicas 3]]
  gpuadmit review  --policy FILE --cluster FILE [--dcgm-file FILE] [--explain] [REVIEW.json | -]
  gpuadmit check-policy FILE
  gpuadmit inventory [--cluster FILE | --kubeconfig FILE [--context NAME]]
                     [--prometheus URL | --dcgm-file FILE] [-o table|json]
  gpuadmit simulate (--cluster FILE --workload FILE |
                     --trace alibaba-openb --nodes FILE --pods FILE [--seed N|A-B]...
                     [--shared-fraction 0] [--shared-replicas 4] [--inflate 130]
                     [--trace-times SPEEDUP])
                    [--policy FILE]... [--strategy NAME]... [--queue] [--drop-unplaced]
                    [--replicas 1] [--watch-delay 0.01] [--bind-delay 0.05] [--nodes-to-score 0]
                    [-o table|json] [--svg FILE]
  gpuadmit report  [--cluster FILE | --kubeconfig FILE [--context NAME] | (in-cluster)]
                   [--dcgm-file FILE... | --prometheus URL [--samples 1] [--interval 15]]
                   [--gpuadmit-metrics FILE] [--underused-allocation 50]
                   [--underused-utilization 30] [-o text|json]
  gpuadmit --help | COMMAND --help | version

  version             the version, git revision, build date, and linked library versions

  --cluster FILE      what `kubectl get nodes,pods -A -o json` prints (JSON or YAML); without it
                      serve and inventory watch the API (--kubeconfig, else in-cluster)
  --metrics-listen    plain HTTP for GET /metrics, /healthz and /readyz (they are also on --listen)
  --metrics-per-node  also export the inventory gauges per node (a `node` label; large clusters)
  --client-ca FILE    clients must present a certificate signed by a CA in FILE (the apiserver's
                      admission client credentials); --client-name N: and naming N
  --workers N         event loops (default: one per CPU the process may use)
  --leader-elect-replicas N
                      how many replicas run (default 3); a replica that cannot reach the leader
                      decides on 1/N of each node's free devices, so none is promised twice
  review              prints exactly what serve answers for the same body; --explain writes the
                      decision trail (the GPU node selection block) to stderr
  simulate            replays pods through the review code against a simulated cluster and a
                      model of kube-scheduler, beside the same stream without gpuadmit
                      (the baseline); docs/decision-quality.md
  report              consolidation opportunities (underused nodes, GPUs a repacking
                      frees), MIG layout pressure (--gpuadmit-metrics: a scrape of gpuadmit's
                      /metrics) and time-slicing replicas per GPU from the metrics window (each
                      --dcgm-file one reading, oldest first; or --samples readings of
                      --prometheus, --interval seconds apart); docs/report.md

Exit codes: 0 ok; 1 policy invalid or review refused (HTTP 4xx); 2 usage; 3 file, TLS or port error.
More: README.md, docs/policy.md.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::cout << kUsage;
    return argc < 2 ? gpuadmit::kExitUsage : gpuadmit::kExitOk;
  }
  std::string_view command = argv[1];
  if ((command == "--version" || command == "version") && argc == 2) {
    std::cout << gpuadmit::VersionText();
    return gpuadmit::kExitOk;
  }
  int sub_argc = argc - 2;
  char** sub_argv = argv + 2;
  // `gpuadmit serve --help` and the like: that command's own usage, before a "--" ends the flags.
  for (int i = 0; i < sub_argc && std::strcmp(sub_argv[i], "--") != 0; ++i) {
    if (std::strcmp(sub_argv[i], "--help") == 0 || std::strcmp(sub_argv[i], "-h") == 0) {
      auto help = gpuadmit::CommandHelp(command);
      std::cout << (help ? *help : kUsage);
      return help ? gpuadmit::kExitOk : gpuadmit::kExitUsage;
    }
  }
  if (command == "serve") return gpuadmit::ServeCommand(sub_argc, sub_argv);
  if (command == "review") return gpuadmit::ReviewCommand(sub_argc, sub_argv);
  if (command == "check-policy") return gpuadmit::CheckPolicyCommand(sub_argc, sub_argv);
  if (command == "inventory") return gpuadmit::InventoryCommand(sub_argc, sub_argv);
  if (command == "simulate") return gpuadmit::SimulateCommand(sub_argc, sub_argv);
  if (command == "report") return gpuadmit::ReportCommand(sub_argc, sub_argv);
  if (command == "version" || command == "--version") {
    std::cerr << "gpuadmit version: takes no arguments (see gpuadmit version --help)\n";
    return gpuadmit::kExitUsage;
  }
  std::cerr << "gpuadmit: unknown command \"" << command << "\"\n" << kUsage;
  return gpuadmit::kExitUsage;
}
