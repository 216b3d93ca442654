#include "webhook/cli/command_help.h"

#include <array>
#include <utility>

namespace gpuadmit {
namespace {

constexpr std::string_view kServe = R"(gpuadmit serve: the admission webhook, over HTTPS

Usage: gpuadmit serve --policy FILE --tls-cert FILE --tls-key FILE [flags]

  --policy FILE            the policy (YAML, docs/policy.md); reloaded when it changes, a bad
                           version refused and the last good one kept
  --tls-cert FILE          the serving certificate (PEM); reloaded when it changes
  --tls-key FILE           its key (PEM)
  --listen HOST:PORT       where to serve POST /mutate, /healthz, /readyz, /metrics, /status
                           and /report (default 0.0.0.0:8443)
  --client-ca FILE         require a client certificate signed by a CA in FILE (the apiserver's
                           admission credentials); others fail the TLS handshake (default: none;
                           then each caller address reserves devices apart from the others)
  --client-name NAME       with --client-ca: the client certificate must name NAME, e.g.
                           kube-apiserver (default: any name the CA signed)
  --cluster FILE           the inventory from a file of `kubectl get nodes,pods -A -o json`
                           (JSON or YAML), reloaded when it changes
  --kubeconfig FILE        the inventory from the Kubernetes API through this kubeconfig
                           (default, without --cluster: the pod's service account)
  --context NAME           the kubeconfig's context (default: its current-context)
  --prometheus URL         GPU metrics from DCGM exporter series, polled every 15 s
  --dcgm-file FILE         GPU metrics from exposition text instead
  --metrics-listen H:P     also serve GET /metrics, /healthz, /readyz, /status and /report on
                           plain HTTP here, e.g. :9090 (default: only on --listen)
  --metrics-per-node       also export the inventory gauges per node (off: large clusters)
  --log-level LEVEL        debug, info, warn or error (default info)
  --max-connections N      live connections served; beyond them 503 at once (default 1024)
  --workers N              event loops (default: one per CPU the process may use)
  --leader-elect           replicas elect a leader on a Lease, which decides every review;
                           needs the Kubernetes API and --advertise
  --advertise HOST:PORT    where the other replicas reach this one (the pod IP and port)
  --id NAME                this replica's identity on the Lease (default: the hostname)
  --peer-ca FILE           the CA of the replicas' serving certificate (default: ca.crt beside
                           --tls-cert); a replica presents that certificate when it forwards,
                           and a forwarded review is taken as such only from a peer
  --leader-election-namespace NS   the Lease's namespace (default: the service account's)
  --leader-elect-lease-duration S  seconds (default 15)
  --leader-elect-renew-deadline S  seconds (default 10)
  --leader-elect-retry-period S    seconds (default 2)
  --leader-elect-replicas N        how many replicas run (default 3); one that cannot reach
                                   the leader decides on 1/N of each node's free devices

Exit codes: 0 stopped by SIGTERM; 2 bad command line; 3 a file, the TLS pair or a port failed.
)";

constexpr std::string_view kReview = R"(gpuadmit review: prints exactly what serve answers for a review

Usage: gpuadmit review --policy FILE --cluster FILE [--dcgm-file FILE] [--explain] [REVIEW.json | -]

  --policy FILE      the policy (YAML)
  --cluster FILE     the cluster: what `kubectl get nodes,pods -A -o json` prints
  --dcgm-file FILE   GPU metrics as DCGM exporter text (default: every GPU counts as idle)
  --explain          write the decision trail to stderr: the rules matched, each candidate node
                     and why it was or was not chosen, what was reserved
  REVIEW.json | -    the AdmissionReview (default: standard input)

Exit codes: 0 answered; 1 the review was refused (what serve answers with HTTP 4xx); 2 bad
command line; 3 a file did not load.
)";

constexpr std::string_view kCheckPolicy = R"(gpuadmit check-policy: validates a policy file

Usage: gpuadmit check-policy FILE

Reports every unknown key, wrong type and bad value as FILE:LINE:COL: message.

Exit codes: 0 valid; 1 problems found; 2 bad command line; 3 the file cannot be read.
)";

constexpr std::string_view kInventory = R"(gpuadmit inventory: nodes, GPUs and MIG devices free and used

Usage: gpuadmit inventory [--cluster FILE | --kubeconfig FILE [--context NAME]]
                          [--prometheus URL | --dcgm-file FILE] [-o table|json]

  --cluster FILE      what `kubectl get nodes,pods -A -o json` prints
  --kubeconfig FILE   list nodes and pods through the Kubernetes API (default, without
                      --cluster: the pod's service account)
  --context NAME      the kubeconfig's context (default: its current-context)
  --prometheus URL    GPU metrics from DCGM exporter series
  --dcgm-file FILE    GPU metrics as exposition text
  -o FORMAT           table (default) or json

Exit codes: 0 ok; 2 bad command line; 3 a file or the API could not be read.
)";

constexpr std::string_view kSimulate = R"(gpuadmit simulate: replays arrivals against a model of kube-scheduler, beside the baseline

Usage: gpuadmit simulate (--cluster FILE --workload FILE |
                          --trace alibaba-openb --nodes FILE --pods FILE) [flags]

  --cluster FILE          the cluster: what `kubectl get nodes,pods -A -o json` prints; with
                          ResourceSlices and pods naming ResourceClaimTemplates, the claims
                          are replayed, with kube-scheduler's DRA allocator modelled
  --workload FILE         the arrivals: JSON lines {"at": s, "duration": s, "object": {...}}
                          (a Pod, or a Deployment, ReplicaSet, StatefulSet or Job)
  --trace alibaba-openb   the Alibaba GPU trace instead: --nodes (the node list CSV) and --pods
                          (a pod list CSV), in the FGD paper's order
  --seed N|A-B            the trace's shuffle (default 0); a range runs each seed
  --inflate PERCENT       draw pods until the arrived GPU ask is this share of capacity
                          (default 130)
  --shared-fraction F     of each model's GPU nodes, the share time-sliced (default 0)
  --shared-replicas N     replicas per time-sliced GPU (default 4)
  --trace-times SPEEDUP   the trace's own creation and deletion times, compressed SPEEDUP times
  --policy FILE           a policy to replay (repeatable; default: the baseline only)
  --strategy NAME         the placement strategy, each policy once per strategy (repeatable)
  --queue                 each policy again with the capacity queue
  --drop-unplaced         DRA claims: a pod no node can take on arrival leaves at once,
                          instead of waiting for room
  --replicas N            webhook replicas with separate ledgers (default 1)
  --watch-delay S         seconds from admission to the inventory's watch (default 0.01)
  --bind-delay S          seconds from admission to the scheduler's binding (default 0.05)
  --nodes-to-score PCT    the share of feasible nodes the scheduler scores (default 0:
                          kube-scheduler's adaptive percentage)
  -o FORMAT               table (default) or json (every run's figures)
  --svg FILE              unallocated GPUs against arrived demand, one line per run

Exit codes: 0 ok; 2 bad command line; 3 a file did not load.
)";

constexpr std::string_view kReport = R"(gpuadmit report: consolidation opportunities, MIG layout pressure, time-slicing replicas

Usage: gpuadmit report [--cluster FILE | --kubeconfig FILE [--context NAME]] [flags]

  --cluster FILE                what `kubectl get nodes,pods -A -o json` prints
  --kubeconfig FILE             read the cluster through the Kubernetes API (default, without
                                --cluster: the pod's service account)
  --context NAME                the kubeconfig's context
  --dcgm-file FILE              one reading of DCGM exporter text (repeatable: oldest first, a
                                window of readings)
  --prometheus URL              read DCGM series from Prometheus instead
  --samples N                   readings of --prometheus (default 1)
  --interval S                  seconds between them (default 15)
  --gpuadmit-metrics FILE       a scrape of gpuadmit's /metrics, for MIG layout pressure
  --underused-allocation PCT    a node with less than PCT of its GPUs allocated is underused
                                (default 50)
  --underused-utilization PCT   so is one whose GPU utilisation over the metrics window is
                                below PCT (default 30)
  -o FORMAT                     text (default) or json

Exit codes: 0 ok; 2 bad command line; 3 a file or the API could not be read.
)";

constexpr std::string_view kVersion = R"(gpuadmit version: the version, git revision, build date and linked library versions

Usage: gpuadmit version
)";

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kHelp = {{
    {"serve", kServe},
    {"review", kReview},
    {"check-policy", kCheckPolicy},
    {"inventory", kInventory},
    {"simulate", kSimulate},
    {"report", kReport},
    {"version", kVersion},
}};

}  // namespace

std::optional<std::string_view> CommandHelp(std::string_view command) {
  for (const auto& [name, text] : kHelp) {
    if (name == command) return text;
  }
  return std::nullopt;
}

}  // namespace gpuadmit
