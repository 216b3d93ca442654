#!/usr/bin/env bash
# What forwarding to the leader costs (serve --leader-elect).
#   bench/replicas/run.sh [--duration 10] [--build build]
# On 127.0.0.1: the fake API server process (gpuadmit_fake_api) with the demo cluster, two
# `gpuadmit serve --leader-elect` replicas (r1 leads, r2 follows), and gpuadmit_load POSTing
# bench/fixtures/pod-review-3k.json over kept-alive TLS:
#   c=1:  latency of a review sent to the leader directly, then to the follower (forwarded);
#         the difference is what the forward adds (p50, p99);
#   c=64: throughput and latency through the follower, against the leader directly.
# Both in one run, the leader first. All processes share this machine's CPUs with the client.
# The double-booking figure (devices counted on twice in the 64-way race) is printed by
# tests/e2e/replicas_test.py (e2e.replicas), which runs the race with and without --leader-elect.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd -- "$HERE/../.." && pwd)
build=$REPO/build
duration=10
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/replicas/run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for f in "$build/gpuadmit" "$build/tests/fakes/gpuadmit_fake_api" "$build/bench/gpuadmit_load"; do
  [ -x "$f" ] || { echo "bench/replicas/run.sh: $f is missing (make build)" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/gpuadmit-replicas-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$REPO/certs/gen-certs.sh" --out "$tmp" >/dev/null
mkfifo "$tmp/api.in"
"$build/tests/fakes/gpuadmit_fake_api" --cluster "$REPO/manifests/examples/demo-cluster.json" \
  --token bench --kubeconfig "$tmp/kubeconfig" <"$tmp/api.in" >"$tmp/api.out" 2>&1 &
pids+=($!)
exec 9>"$tmp/api.in"  # held open: the fake API runs until this script ends
for _ in $(seq 100); do grep -q '^ready' "$tmp/api.out" 2>/dev/null && break; sleep 0.1; done

start_replica() {  # NAME PORT
  "$build/gpuadmit" serve --kubeconfig "$tmp/kubeconfig" --policy \
    "$REPO/manifests/examples/policy.yaml" --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" \
    --listen "127.0.0.1:$2" --leader-elect --leader-election-namespace gpuadmit --id "$1" \
    --advertise "127.0.0.1:$2" --log-level warn 2>"$tmp/$1.err" &
  pids+=($!)
}
leading() { curl -s --cacert "$tmp/ca.crt" "https://127.0.0.1:$1/metrics" | grep -q '^gpuadmit_leader 1$'; }
p1=$(free_port)
start_replica r1 "$p1"
for _ in $(seq 200); do leading "$p1" && break; sleep 0.05; done
leading "$p1" || { echo "r1 did not lead; $(tail -3 "$tmp/r1.err")" >&2; exit 1; }
p2=$(free_port)
start_replica r2 "$p2"
for _ in $(seq 200); do
  curl -s --cacert "$tmp/ca.crt" "https://127.0.0.1:$p2/readyz" | grep -q ready && break
  sleep 0.05
done
sleep 3  # r2 reads the Lease (every 2 s) and learns the leader's address

body=$REPO/bench/fixtures/pod-review-3k.json
measure() {  # LABEL PORT CONNECTIONS
  "$build/bench/gpuadmit_load" --url "https://127.0.0.1:$2/mutate" --body "$body" \
    --connections "$3" --threads "$(( $3 < 2 ? $3 : 2 ))" --warmup 1 --duration "$duration" |
    sed -n 's/^LOAD_RESULT //p' | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
l = r["latency_us"]
print("%-28s %9.0f req/s  p50 %7.0f us  p99 %7.0f us  errors %d" % (
    sys.argv[1], r["rps"], l["p50"], l["p99"], sum(r["errors"].values()) if isinstance(r.get("errors"), dict) else r.get("errors", 0)))
print(json.dumps({"label": sys.argv[1], "rps": r["rps"], "p50_us": l["p50"], "p99_us": l["p99"]}),
      file=open(sys.argv[2], "a"))' "$1" "$tmp/results.jsonl"
}
measure "c=1 leader directly" "$p1" 1
measure "c=1 follower (forwarded)" "$p2" 1
measure "c=64 leader directly" "$p1" 64
measure "c=64 follower (forwarded)" "$p2" 64
forwarded=$(curl -s --cacert "$tmp/ca.crt" "https://127.0.0.1:$p2/metrics" |
  sed -n 's/^gpuadmit_forwarded_reviews_total{outcome="answered"} //p')
failures=$(curl -s --cacert "$tmp/ca.crt" "https://127.0.0.1:$p2/metrics" |
  awk '/^gpuadmit_forward_failures_total/ {s += $2} END {print s + 0}')
python3 - "$tmp/results.jsonl" "$forwarded" "$failures" <<'PY'
import json, sys
r = {x["label"]: x for x in map(json.loads, open(sys.argv[1]))}
d, f = r["c=1 leader directly"], r["c=1 follower (forwarded)"]
print("forwarding adds: p50 %+.0f us, p99 %+.0f us (c=1)" % (f["p50_us"] - d["p50_us"],
                                                             f["p99_us"] - d["p99_us"]))
D, F = r["c=64 leader directly"], r["c=64 follower (forwarded)"]
print("c=64 through the follower: %.2fx the leader's throughput, p99 %.2fx" % (
    F["rps"] / D["rps"], F["p99_us"] / D["p99_us"]))
print("the follower forwarded %s reviews, %s decided locally (forward failures)" % (
    sys.argv[2], sys.argv[3]))
PY
