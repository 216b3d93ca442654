#!/usr/bin/env bash
# Decision quality: the figures of docs/decision-quality.md, measured with `gpuadmit simulate`
# in one run. Run with --help for the options.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)

usage() {
  cat <<'EOF'
Usage: bench/simulate/run.sh [options]

Replays, each against the cluster without gpuadmit (the baseline) in the same run:
  burst     a Deployment of 20 replicas asking 2g.20gb on the demo cluster
            (tests/fixtures/simulate), with the default policy, then with --replicas 3
            (devices counted on twice per 1,000 pods);
  alibaba   the Alibaba GPU trace (openb, default pod list), mapped as docs/decision-quality.md
            says, SEEDS seeds, each placement strategy: unallocated GPUs at 100% arrived demand,
            median and range, and each strategy's ratio to the baseline; the curve of the first
            seed as SVG;
  peer      the placement figures to hold against FGD's (the paper's simulator, run by hand as
            docs/placement-peer.md says): the whole-GPU default pod list at PEER_SEEDS seeds
            (42-51), then gpuspec33, multigpu20 and 30% time-sliced nodes at the first five of
            them, each with the baseline, the shipped policy and
            manifests/examples/policy-large-cluster.yaml (required pin; and its preferred
            variant with every node scored): median and range, and ratios to the baseline;
            the shipped policy with first-fit and with fragmentation (GPU pods only, as its
            manifests send them); the default pod list on every 13th and every 24th node (94
            and 51 nodes);
  mig       a MIG-only stream (bench/simulate/scale_workload.py --mig-only) on 300 H100 nodes:
            placed pods against the offline oracle's;
  dra       DRA claims on dynamic MIG (tests/fixtures/dra/mixed-cluster.json, 4 nodes of 8
            GPUs): DRA_SEEDS streams of 300 pods of mixed MIG claims (make-fixtures.py --stream),
            the claims as written (baseline), then gpuadmit placing the pod only, placing and
            steering, firstAvailable fallbacks with the allocator's first fit, and fallbacks
            steered: pods that found no node on arrival, and the GPUs left unallocated then;
  speed     CPU seconds of the whole Alibaba replay (130% of capacity, 1,213 nodes, baseline
            plus three policies) and of 100,000 arrivals on 5,000 nodes (baseline plus the
            default policy, then plus policy-large-cluster.yaml).
Everything is written to --out; a summary is printed at the end.

Options:
  --gpuadmit PATH   gpuadmit binary (default build/gpuadmit)
  --trace DIR       the Alibaba trace (default ../shared/traces/alibaba-gpu-v2023 beside the repo)
  --seeds A-B       seeds of the Alibaba replay (default 0-9)
  --peer-seeds A-B  seeds of the peer part (default 42-51)
  --dra-seeds A-B   seeds of the DRA streams (default 1-10)
  --only LIST       comma-separated parts to run (default burst,alibaba,peer,mig,dra,speed)
  --quick           seeds 0-2, 60 MIG nodes, 20,000 arrivals on 5,000 nodes
  --out DIR         results folder (default build/bench-simulate)
  -h, --help        this text
EOF
}

GPUADMIT="$REPO_ROOT/build/gpuadmit"
TRACE="$REPO_ROOT/../shared/traces/alibaba-gpu-v2023"
SEEDS=0-9
PEER_SEEDS=42-51
DRA_SEEDS=1-10
ONLY=burst,alibaba,peer,mig,dra,speed
OUT="$REPO_ROOT/build/bench-simulate"
MIG_NODES=300
SCALE_PODS=100000
while (($#)); do
  case "$1" in
    --gpuadmit) GPUADMIT=$2; shift 2 ;;
    --trace) TRACE=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --peer-seeds) PEER_SEEDS=$2; shift 2 ;;
    --dra-seeds) DRA_SEEDS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --quick) SEEDS=0-2; PEER_SEEDS=42-43; DRA_SEEDS=1-3; MIG_NODES=60; SCALE_PODS=20000; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$GPUADMIT" ]] || { echo "run.sh: no gpuadmit binary at $GPUADMIT (make build)" >&2; exit 2; }
for seeds in "$SEEDS" "$PEER_SEEDS" "$DRA_SEEDS"; do
  [[ "$seeds" =~ ^[0-9]+(-[0-9]+)?$ ]] || { echo "run.sh: seeds must be N or A-B" >&2; exit 2; }
done
for part in ${ONLY//,/ }; do
  case "$part" in burst|alibaba|peer|mig|dra|speed) ;; *)
    echo "run.sh: --only takes burst, alibaba, peer, mig, dra, speed; not $part" >&2; exit 2 ;;
  esac
done
wants() { [[ ",$ONLY," == *",$1,"* ]]; }
if wants alibaba || wants peer || wants speed; then
  [[ -f "$TRACE/openb_node_list_gpu_node.csv" ]] ||
    { echo "run.sh: no Alibaba trace in $TRACE (--trace DIR)" >&2; exit 2; }
fi
mkdir -p "$OUT"
POLICY="$REPO_ROOT/manifests/examples/policy.yaml"
FIXTURES="$REPO_ROOT/tests/fixtures/simulate"
NODES_CSV="$TRACE/openb_node_list_gpu_node.csv"
PODS_CSV="$TRACE/openb_pod_list_default.csv"

# CPU seconds (user + system) of a command, its output to a file.
cpu_seconds() {
  local out=$1; shift
  /usr/bin/time -f "%U %S" -o "$OUT/time.txt" "$@" > "$out"
  awk '{printf "%.2f\n", $1 + $2}' "$OUT/time.txt"
}

if wants burst; then
  echo "== burst: 20 replicas of 2g.20gb within 100 ms" >&2
  "$GPUADMIT" simulate --cluster "$FIXTURES/seed003-nodes.json" \
    --workload "$FIXTURES/seed003-burst.jsonl" --policy "$POLICY" -o json > "$OUT/burst.json"
  "$GPUADMIT" simulate --cluster "$FIXTURES/seed003-nodes.json" \
    --workload "$FIXTURES/seed003-burst.jsonl" --policy "$POLICY" --replicas 3 \
    -o json > "$OUT/burst-replicas3.json"
fi

if wants alibaba; then
  echo "== alibaba: seeds $SEEDS, every strategy" >&2
  "$GPUADMIT" simulate --trace alibaba-openb --nodes "$NODES_CSV" --pods "$PODS_CSV" \
    --seed "$SEEDS" --policy "$POLICY" --strategy most-idle --strategy best-fit \
    --strategy first-fit --strategy score --strategy fragmentation \
    --svg "$OUT/alibaba.svg" -o json > "$OUT/alibaba.json"
fi

if wants peer; then
  echo "== peer: seeds $PEER_SEEDS, shipped and large-cluster policies" >&2
  LARGE="$REPO_ROOT/manifests/examples/policy-large-cluster.yaml"
  sed 's/^  affinity: required/  affinity: preferred/' "$LARGE" > "$OUT/policy-large-preferred.yaml"
  first=${PEER_SEEDS%%-*}
  five="$first-$((first + 4))"
  # LIST SEEDS NAME [simulate options]: baseline, shipped and large-cluster, in one run; then
  # the large-cluster policy's preferred variant with every node scored.
  peer_run() {
    local pods=$1 seeds=$2 name=$3; shift 3
    "$GPUADMIT" simulate --trace alibaba-openb --nodes "$NODES_CSV" --pods "$TRACE/$pods" \
      --seed "$seeds" --policy "$POLICY" --policy "$LARGE" "$@" -o json > "$OUT/peer-$name.json"
    "$GPUADMIT" simulate --trace alibaba-openb --nodes "$NODES_CSV" --pods "$TRACE/$pods" \
      --seed "$seeds" --policy "$OUT/policy-large-preferred.yaml" --nodes-to-score 100 "$@" \
      -o json > "$OUT/peer-$name-scored.json"
  }
  peer_run openb_pod_list_default.csv "$PEER_SEEDS" default
  peer_run openb_pod_list_gpuspec33.csv "$five" gpuspec33
  peer_run openb_pod_list_multigpu20.csv "$five" multigpu20
  peer_run openb_pod_list_default.csv "$five" time-sliced --shared-fraction 0.3 --shared-replicas 4
  # The shipped policy with the fragmentation strategy instead, as its manifests send it only
  # GPU pods: why it keeps first-fit.
  "$GPUADMIT" simulate --trace alibaba-openb --nodes "$NODES_CSV" --pods "$PODS_CSV" \
    --seed "$PEER_SEEDS" --policy "$POLICY" --strategy first-fit --strategy fragmentation \
    -o json > "$OUT/peer-gpu-pods-only.json"
  # Smaller clusters, where kube-scheduler scores every node: every 13th and every 24th node of
  # the trace (94 and 51 nodes), the default pod list at PEER_SEEDS.
  for k in 13 24; do
    awk -v k="$k" 'NR == 1 || (NR - 2) % k == 0' "$NODES_CSV" > "$OUT/nodes-every-$k.csv"
    "$GPUADMIT" simulate --trace alibaba-openb --nodes "$OUT/nodes-every-$k.csv" --pods "$PODS_CSV" \
      --seed "$PEER_SEEDS" --policy "$POLICY" --policy "$LARGE" -o json > "$OUT/peer-every-$k.json"
  done
fi

if wants mig; then
  echo "== mig: $MIG_NODES H100 nodes, single-instance MIG pods, against the oracle" >&2
  python3 "$SCRIPT_DIR/scale_workload.py" --mig-only --nodes "$MIG_NODES" \
    "$OUT/mig-cluster.json" "$OUT/mig-workload.jsonl"
  "$GPUADMIT" simulate --cluster "$OUT/mig-cluster.json" --workload "$OUT/mig-workload.jsonl" \
    --policy "$POLICY" --strategy most-idle --strategy best-fit --strategy fragmentation \
    -o json > "$OUT/mig.json"
fi

if wants dra; then
  echo "== dra: seeds $DRA_SEEDS, mixed MIG claims on dynamic MIG" >&2
  DRA="$REPO_ROOT/tests/fixtures/dra"
  printf 'mig: {fallback: false}\ndra: {steerClaims: false}\n' > "$OUT/dra-placed.yaml"
  printf 'mig: {fallback: false}\n' > "$OUT/dra-steered.yaml"
  printf 'dra: {steerClaims: false}\n' > "$OUT/dra-fallback.yaml"
  printf 'dra: {steerClaims: true}\n' > "$OUT/dra-fallback-steered.yaml"
  runs=()
  for ((seed = ${DRA_SEEDS%%-*}; seed <= ${DRA_SEEDS##*-}; seed++)); do
    python3 "$DRA/make-fixtures.py" --stream "$seed" > "$OUT/dra-stream.jsonl"
    "$GPUADMIT" simulate --cluster "$DRA/mixed-cluster.json" --workload "$OUT/dra-stream.jsonl" \
      --policy "$OUT/dra-placed.yaml" --policy "$OUT/dra-steered.yaml" \
      --policy "$OUT/dra-fallback.yaml" --policy "$OUT/dra-fallback-steered.yaml" \
      -o json > "$OUT/dra-$seed.json"
    runs+=("$OUT/dra-$seed.json")
  done
  python3 -c 'import json, sys; print(json.dumps({"runs": [dict(r, seed=int(p.split("-")[-1][:-5]))
    for p in sys.argv[1:] for r in json.load(open(p))["runs"]]}))' "${runs[@]}" > "$OUT/dra.json"
  rm -f "${runs[@]}" "$OUT/dra-stream.jsonl"
fi

if wants speed; then
  echo "== speed: the Alibaba replay, then $SCALE_PODS arrivals on 5,000 nodes" >&2
  alibaba_cpu=$(cpu_seconds "$OUT/speed-alibaba.txt" "$GPUADMIT" simulate --trace alibaba-openb \
    --nodes "$NODES_CSV" --pods "$PODS_CSV" --seed 0 --policy "$POLICY" \
    --strategy most-idle --strategy best-fit --strategy fragmentation)
  python3 "$SCRIPT_DIR/scale_workload.py" --nodes 5000 --pods "$SCALE_PODS" \
    "$OUT/scale-cluster.json" "$OUT/scale-workload.jsonl"
  scale_cpu=$(cpu_seconds "$OUT/speed-scale.txt" "$GPUADMIT" simulate \
    --cluster "$OUT/scale-cluster.json" --workload "$OUT/scale-workload.jsonl" --policy "$POLICY")
  scale_large_cpu=$(cpu_seconds "$OUT/speed-scale-large.txt" "$GPUADMIT" simulate \
    --cluster "$OUT/scale-cluster.json" --workload "$OUT/scale-workload.jsonl" \
    --policy "$REPO_ROOT/manifests/examples/policy-large-cluster.yaml")
  printf '{"alibaba_cpu_seconds": %s, "scale_cpu_seconds": %s, "scale_large_cpu_seconds": %s, "scale_arrivals": %s}\n' \
    "$alibaba_cpu" "$scale_cpu" "$scale_large_cpu" "$SCALE_PODS" > "$OUT/speed.json"
  rm -f "$OUT/scale-workload.jsonl" "$OUT/time.txt"
fi

python3 "$SCRIPT_DIR/summarize.py" "$OUT"
