#!/usr/bin/env bash
# HTTPS load benchmark for gpuadmit, measured against nginx answering a fixed
# AdmissionReview over the same TLS setup (the transport ceiling).
# Run with --help for the options.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)

usage() {
  cat <<'EOF'
Usage: bench/load/run.sh [options]

POSTs a real ~3.4 KB pod AdmissionReview (bench/fixtures/pod-review-3k.json)
over TLS keep-alive with wrk (or --client gpuadmit_load), at each concurrency,
against
  gpuadmit  the gpuadmit server (started here, or --target-url), and
  nginx     nginx answering a fixed AdmissionReview over TLS (transport ceiling),
interleaved per concurrency (nginx, then gpuadmit), with a warm-up before each
measured point. Prints req/s, p50/p99/max latency and errors for both and the
gpuadmit/nginx ratios; the raw JSON lines go to a results file.

With --rate the load is open loop instead (gpuadmit_load --rate): at each rate,
requests are sent on a fixed schedule whatever the answers do, and each one's
latency counts from when it was due, so a server stall shows in the latencies
of every request it delays (a closed loop sends less during a stall and hides
it). Prints the achieved rate, p50/p99/p99.9/max and errors for both servers
and the gpuadmit/nginx ratios of p99 and p99.9.

With gpuadmit_load, each point also gives the server's CPU time per request
over the measured window (nginx's master and workers; the gpuadmit started
here, not one behind --target-url), and the gpuadmit/nginx ratio of it: on
CPUs the client and the servers share, the tail follows it.

Everything listens on 127.0.0.1 on free ports, in a temporary directory that is
removed on exit together with every process started here.

Options:
  --duration S          seconds per measured point (default 10)
  --quick               3 s per measured point
  --warmup S            warm-up seconds before each point, 0 = none (default 1)
  --conc "LIST"         concurrencies (default "1 8 64 256")
  --rate "LIST"         open loop instead: these total rates in req/s, e.g.
                        "1000 5000", each measured on both servers in turn
                        (implies --client gpuadmit_load; not with --conc)
  --rounds N            with --rate: measure every rate N times, the servers
                        alternated each time (default 1). The summary adds,
                        per rate, the median of the rounds' gpuadmit/nginx
                        ratios and how many rounds met the target: on shared
                        vCPUs one round's tail ratio is mostly noise. It also
                        pools every round's latencies per server and rate and
                        takes the percentiles once ("pooled" lines), with
                        their ratios and a verdict on them: many short rounds
                        (e.g. --rounds 20 --duration 2) spread the host's noisy
                        seconds over both servers
  --controls            with --rate: after gpuadmit in each round, two controls on
                        the same gpuadmit, to show where its time over nginx goes:
                          gpuadmit:no-plan    the same pod without its GPU
                                              (--control-body): decoded,
                                              planned to no GPU, answered
                                              allowed with no patch
                          gpuadmit:no-review  the request body POSTed to a path
                                              gpuadmit answers 404 (read off the
                                              socket, never decoded): TLS and
                                              HTTP alone
                        each with its ratios to nginx (its 404s are by design,
                        not errors of the run)
  --control-body FILE   the no-plan control's body (default
                        bench/fixtures/pod-review-cpu-3k.json)
  --rate-connections N  connections the open-loop client keeps open (default
                        64). One carries one request at a time: a request due
                        while all are busy waits for one, and that wait counts
                        in its latency
  --callgrind           with --rate: run each server under valgrind's callgrind
                        (cache simulation) and report, per request served,
                        the instructions, code lines and data lines (64-byte
                        lines missed in a 32 KiB L1i and L1d) its event loop
                        ran, with the gpuadmit/nginx ratios. Counts, not
                        times: the host's steal and noise do not move them.
                        valgrind runs a server some 50x slower, so use a
                        low rate (e.g.
                        --rate 100 --duration 20 --warmup 0); the latencies
                        and CPU figures of such a run are valgrind's, not the
                        server's. Requests are counted from the load sent
                        (rate x (warm-up + duration) each point), not from
                        the server: the readiness and sanity requests (under
                        ten) are left out. Not with --controls
  --only nginx|gpuadmit run one server only
  --gpuadmit PATH       gpuadmit binary (default build/gpuadmit)
  --gpuadmit-arg ARG    extra argument for `gpuadmit serve` (repeatable)
  --policy FILE         default manifests/examples/policy.yaml
  --cluster FILE        default manifests/examples/demo-cluster.json
  --target-url URL      measure an already running gpuadmit instead of starting
                        one (https://HOST:PORT or https://HOST:PORT/mutate)
  --body FILE           request body (default bench/fixtures/pod-review-3k.json;
                        bench/fixtures/pod-review-cpu-3k.json is the same pod
                        without its GPU, which gpuadmit answers as nginx does:
                        a control that costs it a decode and no plan)
  --nginx PATH          nginx binary (default /usr/sbin/nginx)
  --server-cpus LIST    pin the servers with taskset -c LIST (default: no pinning)
  --client-cpus LIST    pin the load client with taskset -c LIST (default: no pinning)
  --client-threads N    the load client's threads: min(c, N) (default 2). On 2 vCPUs
                        shared with the servers, fewer client threads leave the
                        servers more CPU and change the tail (see docs/performance.md)
  --out FILE            write the raw JSON lines here (default: a new file in
                        bench/results/, whose path is printed)
  --client wrk|gpuadmit_load
                        the load client (default wrk). wrk opens its connections
                        as its clock starts, so each connection's first request
                        waits behind the TLS handshakes of all of them (about
                        100 ms at c=256 on 2 vCPUs, for either server).
                        gpuadmit_load (build/bench/gpuadmit_load) opens and
                        handshakes every connection, warms up on them (--warmup)
                        and then measures: the latency of open connections, as
                        the apiserver keeps them.
  --load-client PATH    gpuadmit_load binary (default build/bench/gpuadmit_load)
  --strict-status       count every non-2xx answer exactly (a wrk Lua response()
                        hook; costs the client ~10-15% throughput); default:
                        wrk's own counter of answers with status >= 400
  --keep-tmp            keep the temporary directory (logs, certs, nginx.conf)
  -h, --help            this help

wrk runs with -t min(c,N) -c c --latency --timeout 2s (N = --client-threads,
default 2); gpuadmit_load with the
same threads, connections and timeout, and counts every non-2xx answer. With
--rate: gpuadmit_load --rate R --connections M --threads min(M,N) --timeout 2
(M = --rate-connections); the request due at t0 + i/R is sent then or as soon
as a connection is free, and a request not answered within 2 s of its due time
is a timeout error.
errors = connect + read + write + timeout socket errors + HTTP errors
(status >= 400, or any non-2xx with --strict-status).
Exit status: 0 done, 1 a run failed (server did not start, wrong answer,
server died), 2 bad usage or a missing tool/file.
EOF
}

die() { echo "run.sh: $*" >&2; exit 1; }
usage_error() { echo "run.sh: $*" >&2; echo "Try 'bench/load/run.sh --help'." >&2; exit 2; }

# Absolute path for a user-supplied path (relative to the caller's directory).
abspath() {
  case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}

duration=10
warmup=1
concs="1 8 64 256"
conc_set=0
rates=""
rounds=1
controls=0
control_body="$REPO_ROOT/bench/fixtures/pod-review-cpu-3k.json"
rate_connections=64
client_set=0
only=""
gpuadmit_bin="$REPO_ROOT/build/gpuadmit"
gpuadmit_args=()
policy="$REPO_ROOT/manifests/examples/policy.yaml"
cluster="$REPO_ROOT/manifests/examples/demo-cluster.json"
target_url=""
body="$REPO_ROOT/bench/fixtures/pod-review-3k.json"
nginx_response="$REPO_ROOT/bench/fixtures/nginx-response.json"
nginx_bin=/usr/sbin/nginx
server_cpus=""
client_cpus=""
client_threads=2
out=""
keep_tmp=0
strict=0
lua="$SCRIPT_DIR/admission.lua"
client=wrk
callgrind=0
load_client="$REPO_ROOT/build/bench/gpuadmit_load"

need_arg() { [[ $# -ge 2 ]] || usage_error "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --duration) need_arg "$@"; duration=$2; shift 2 ;;
    --quick) duration=3; shift ;;
    --warmup) need_arg "$@"; warmup=$2; shift 2 ;;
    --conc) need_arg "$@"; concs=$2; conc_set=1; shift 2 ;;
    --rate) need_arg "$@"; rates=$2; shift 2 ;;
    --rate-connections) need_arg "$@"; rate_connections=$2; shift 2 ;;
    --rounds) need_arg "$@"; rounds=$2; shift 2 ;;
    --controls) controls=1; shift ;;
    --callgrind) callgrind=1; shift ;;
    --control-body) need_arg "$@"; control_body=$(abspath "$2"); shift 2 ;;
    --only) need_arg "$@"; only=$2; shift 2 ;;
    --gpuadmit) need_arg "$@"; gpuadmit_bin=$(abspath "$2"); shift 2 ;;
    --gpuadmit-arg) need_arg "$@"; gpuadmit_args+=("$2"); shift 2 ;;
    --policy) need_arg "$@"; policy=$(abspath "$2"); shift 2 ;;
    --cluster) need_arg "$@"; cluster=$(abspath "$2"); shift 2 ;;
    --target-url) need_arg "$@"; target_url=$2; shift 2 ;;
    --body) need_arg "$@"; body=$(abspath "$2"); shift 2 ;;
    --nginx) need_arg "$@"; nginx_bin=$(abspath "$2"); shift 2 ;;
    --server-cpus) need_arg "$@"; server_cpus=$2; shift 2 ;;
    --client-cpus) need_arg "$@"; client_cpus=$2; shift 2 ;;
    --client-threads) need_arg "$@"; client_threads=$2; shift 2 ;;
    --out) need_arg "$@"; out=$(abspath "$2"); shift 2 ;;
    --keep-tmp) keep_tmp=1; shift ;;
    --strict-status) strict=1; shift ;;
    --client) need_arg "$@"; client=$2; client_set=1; shift 2 ;;
    --load-client) need_arg "$@"; load_client=$(abspath "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown option: $1" ;;
  esac
done

# ---- validate -------------------------------------------------------------
[[ $duration =~ ^[1-9][0-9]*$ ]] || usage_error "--duration wants a whole number of seconds > 0"
[[ $warmup =~ ^[0-9]+$ ]] || usage_error "--warmup wants a whole number of seconds"
[[ $client_threads =~ ^[1-9][0-9]*$ ]] || usage_error "--client-threads wants a whole number > 0"
read -r -a conc_list <<<"$concs"
[[ ${#conc_list[@]} -gt 0 ]] || usage_error "--conc is empty"
for c in "${conc_list[@]}"; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || usage_error "bad concurrency: $c"
done
case $client in
  wrk|gpuadmit_load) ;;
  *) usage_error "--client takes wrk or gpuadmit_load" ;;
esac
[[ $rate_connections =~ ^[1-9][0-9]*$ ]] || usage_error "--rate-connections wants a whole number > 0"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage_error "--rounds wants a whole number > 0"
mode=closed
rate_list=()
if [[ -n $rates ]]; then
  mode=open
  read -r -a rate_list <<<"$rates"
  for r in "${rate_list[@]}"; do
    [[ $r =~ ^[1-9][0-9]*$ ]] || usage_error "bad rate: $r (whole req/s > 0)"
  done
  [[ $conc_set == 0 ]] || usage_error "--rate and --conc exclude each other (open loop keeps --rate-connections open)"
  [[ $client_set == 0 || $client == gpuadmit_load ]] \
    || usage_error "--rate needs --client gpuadmit_load (wrk has no open-loop mode)"
  client=gpuadmit_load
fi
[[ $rounds == 1 || $mode == open ]] || usage_error "--rounds needs --rate"
case $only in
  ""|nginx|gpuadmit) ;;
  *) usage_error "--only takes nginx or gpuadmit" ;;
esac
[[ $controls == 0 || $mode == open ]] || usage_error "--controls needs --rate"
[[ $controls == 0 || $only != nginx ]] || usage_error "--controls are gpuadmit's; not with --only nginx"
[[ $callgrind == 0 || $mode == open ]] || usage_error "--callgrind needs --rate"
[[ $callgrind == 0 || $controls == 0 ]] \
  || usage_error "--callgrind and --controls exclude each other (one gpuadmit serves all three)"
[[ $callgrind == 0 || -z $target_url ]] || usage_error "--callgrind runs the servers it starts; not with --target-url"
if [[ -n $target_url && $only == nginx ]]; then
  usage_error "--target-url is the gpuadmit target; it makes no sense with --only nginx"
fi

run_nginx=1
run_gpuadmit=1
[[ $only == gpuadmit ]] && run_nginx=0
[[ $only == nginx ]] && run_gpuadmit=0
start_gpuadmit=0
[[ $run_gpuadmit == 1 && -z $target_url ]] && start_gpuadmit=1

need_tool() { command -v "$1" >/dev/null 2>&1 || { echo "run.sh: $1 not found ($2)" >&2; exit 2; }; }
need_file() { [[ -f $1 ]] || { echo "run.sh: missing $1 ($2)" >&2; exit 2; }; }
if [[ $client == wrk ]]; then
  need_tool wrk "apt-get install wrk"
else
  [[ -x $load_client ]] || { echo "run.sh: gpuadmit_load not found at $load_client (make build, or --load-client PATH)" >&2; exit 2; }
fi
need_tool curl "apt-get install curl"
need_tool openssl "apt-get install openssl"
# Debian's python3 when there is one: a version manager's shim first on PATH (pyenv) costs
# about 0.8 s a call here, and run.sh calls python a dozen times. Only the standard library is used.
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
need_tool "$python" "used to pick free ports and to summarise"
if [[ -n $server_cpus || -n $client_cpus ]]; then need_tool taskset "util-linux"; fi
[[ $callgrind == 0 ]] || need_tool valgrind "apt-get install valgrind"
need_file "$lua" "the wrk script"
need_file "$body" "request body"
[[ $controls == 0 ]] || need_file "$control_body" "--control-body"
if [[ $run_nginx == 1 ]]; then
  [[ -x $nginx_bin ]] || { echo "run.sh: nginx not found at $nginx_bin (apt-get install nginx-light, or --nginx PATH)" >&2; exit 2; }
  need_file "$nginx_response" "the fixed answer nginx returns"
fi
if [[ $start_gpuadmit == 1 ]]; then
  [[ -x $gpuadmit_bin ]] || { echo "run.sh: gpuadmit binary not found at $gpuadmit_bin (build it with make, pass --gpuadmit PATH, --target-url URL, or use --only nginx)" >&2; exit 2; }
  need_file "$policy" "--policy"
  need_file "$cluster" "--cluster"
fi

out_is_default=0
if [[ -z $out ]]; then
  out_is_default=1
  mkdir -p "$REPO_ROOT/bench/results"
  out="$REPO_ROOT/bench/results/load-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
fi
mkdir -p "$(dirname -- "$out")"
: >"$out"

# ---- temp dir, process tracking, cleanup ------------------------------------
workdir=$(mktemp -d "${TMPDIR:-/tmp}/gpuadmit-load.XXXXXX")
mkdir "$workdir/latencies"
pids=()

# stop_pid PID: SIGTERM, then SIGKILL after stop_steps x 50 ms.
stop_steps=60
stop_pid() {
  local pid=$1 i children
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  children=$(pgrep -P "$pid" 2>/dev/null || true)
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < stop_steps; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  # nginx workers (children of the master we started) must not outlive it.
  local child
  for child in $children; do
    kill -KILL "$child" 2>/dev/null || true
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local pid
  for pid in ${pids[@]+"${pids[@]}"}; do
    stop_pid "$pid"
  done
  # A default results file with no measured point is only noise.
  if [[ $out_is_default == 1 && -f $out ]] && ! grep -q '"kind":"point"' "$out"; then
    rm -f -- "$out"
  fi
  if [[ $keep_tmp == 1 ]]; then
    echo "run.sh: kept $workdir" >&2
  else
    rm -rf -- "$workdir"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$python" -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

now_ms() { date +%s%3N; }

# wait_ready URL PID-or-empty: poll until URL answers 200; at most ready_s, 50 ms apart.
ready_s=10
wait_ready() {
  local url=$1 pid=$2 deadline code
  deadline=$(($(now_ms) + ready_s * 1000))
  while (($(now_ms) < deadline)); do
    code=$(curl -sk -o /dev/null --max-time 1 -w '%{http_code}' "$url" 2>/dev/null || true)
    [[ $code == 200 ]] && return 0
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    sleep 0.05
  done
  return 1
}

show_log() {
  echo "---- last lines of $1 ----" >&2
  tail -n 30 "$1" >&2 2>/dev/null || true
  echo "----" >&2
}

server_prefix=()
[[ -n $server_cpus ]] && server_prefix=(taskset -c "$server_cpus")
# --callgrind: each server's event loop counted from its first turn (gpuadmit's loops run
# EventLoop::Run for good; nginx's workers call ngx_process_events_and_timers each turn), one
# file per process; valgrind starts and stops slowly, and writes its counts on the way out.
if [[ $callgrind == 1 ]]; then
  mkdir "$workdir/callgrind"
  server_prefix+=(valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no
    "--toggle-collect=gpuadmit::EventLoop::Run()" --toggle-collect=ngx_process_events_and_timers
    "--callgrind-out-file=$workdir/callgrind/callgrind.%p" --log-file="$workdir/callgrind/valgrind.%p.log")
  ready_s=120
  stop_steps=1200
fi
client_prefix=()
[[ -n $client_cpus ]] && client_prefix=(taskset -c "$client_cpus")

# ---- TLS material: throw-away CA + server cert (ECDSA P-256) ----------------
make_certs() {
  local d=$workdir/tls
  mkdir -p "$d"
  (
    cd "$d"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null
    openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=gpuadmit-load-bench-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out ca.crt 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key 2>/dev/null
    openssl req -new -key server.key -subj "/CN=localhost" -out server.csr 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 \
      -extfile server.ext -out server.crt 2>/dev/null
    chmod 600 ca.key server.key
  ) || die "openssl failed to make the test certificates"
  ca_crt=$d/ca.crt
  tls_crt=$d/server.crt
  tls_key=$d/server.key
}

# ---- nginx --------------------------------------------------------------------
start_nginx() {
  local port=$1 answer d=$workdir/nginx user_line=""
  answer=$(tr -d '\n' <"$nginx_response")
  case $answer in
    *"'"* | *'$'* | *\\*) die "$nginx_response must not contain ' \$ or \\ (it goes into an nginx string)" ;;
  esac
  mkdir -p "$d/tmp"
  # As root, nginx would switch its workers to nobody, who cannot enter the
  # 0700 temp dir; keep the workers as the invoking user instead.
  if [[ $(id -u) == 0 ]]; then
    user_line="user $(id -un) $(id -gn);"
  fi
  cat >"$d/nginx.conf" <<EOF
$user_line
worker_processes auto;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path $d/tmp/client_body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  client_max_body_size 3m;
  client_body_buffer_size 16k;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  log_format reqlen '\$status \$connection_requests \$request_length';
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $tls_crt;
    ssl_certificate_key $tls_key;
    ssl_protocols TLSv1.2 TLSv1.3;
    # 'return' discards the request body: nginx still reads it off the socket
    # (and decrypts it) before the next request on the connection, which the
    # sanity check verifies (2nd POST on the same connection answered 200).
    # Note \$request_length does not count a discarded body.
    location = /mutate {
      default_type application/json;
      return 200 '$answer';
    }
    location = /mutate-check {
      access_log $d/check.log reqlen;
      default_type application/json;
      return 200 '$answer';
    }
    location = /readyz { default_type text/plain; return 200 'ok'; }
    location / { return 404; }
  }
}
EOF
  "$nginx_bin" -t -q -p "$d/" -c "$d/nginx.conf" -e "$d/error.log" >"$d/nginx-t.log" 2>&1 \
    || { cat "$d/nginx-t.log" >&2; die "nginx rejected $d/nginx.conf"; }
  ${server_prefix[@]+"${server_prefix[@]}"} "$nginx_bin" -p "$d/" -c "$d/nginx.conf" -e "$d/error.log" \
    >"$d/stdout.log" 2>&1 &
  nginx_pid=$!
  pids+=("$nginx_pid")
  if ! wait_ready "https://127.0.0.1:$port/readyz" "$nginx_pid"; then
    show_log "$d/error.log"
    show_log "$d/stdout.log"
    die "nginx did not become ready on 127.0.0.1:$port within $ready_s s"
  fi
}

# ---- gpuadmit -----------------------------------------------------------------
start_gpuadmit() {
  local port=$1
  (cd "$REPO_ROOT" && exec ${server_prefix[@]+"${server_prefix[@]}"} "$gpuadmit_bin" serve \
    --policy "$policy" --cluster "$cluster" \
    --tls-cert "$tls_crt" --tls-key "$tls_key" --listen "127.0.0.1:$port" \
    ${gpuadmit_args[@]+"${gpuadmit_args[@]}"}) >"$workdir/gpuadmit.log" 2>&1 &
  gpuadmit_pid=$!
  pids+=("$gpuadmit_pid")
  if ! wait_ready "https://127.0.0.1:$port/readyz" "$gpuadmit_pid"; then
    show_log "$workdir/gpuadmit.log"
    if ! kill -0 "$gpuadmit_pid" 2>/dev/null; then
      local st=0
      wait "$gpuadmit_pid" || st=$?
      die "gpuadmit exited with status $st before it was ready"
    fi
    die "gpuadmit did not answer 200 on https://127.0.0.1:$port/readyz within $ready_s s"
  fi
}

# ---- sanity: one keep-alive connection, two POSTs, right answer ------------------
# sanity NAME URL BODY CURL-TLS-ARGS...: the answer to BODY is left in $workdir/NAME-answer1.json
sanity() {
  local name=$1 url=$2 send=$3
  shift 3
  local r1=$workdir/$name-answer1.json r2=$workdir/$name-answer2.json info
  info=$(curl -sS --max-time 10 "$@" -H 'Content-Type: application/json' --data-binary "@$send" \
    -w '%{http_code} %{num_connects}\n' -o "$r1" "$url" -o "$r2" "$url" 2>"$workdir/$name-curl.err") \
    || { cat "$workdir/$name-curl.err" >&2; die "$name: POST $url failed"; }
  local codes conns
  codes=$(awk '{printf "%s ", $1}' <<<"$info")
  conns=$(awk '{printf "%s ", $2}' <<<"$info")
  [[ $codes == "200 200 " ]] || { head -c 600 "$r1" >&2; echo >&2; die "$name: POST $url answered HTTP $codes(want 200 200)"; }
  local uid
  uid=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["request"]["uid"])' "$send")
  "$python" - "$r1" "$uid" "$name" <<'EOF' || die "$name: the answer is not a valid AdmissionReview response"
import json, sys
path, uid, name = sys.argv[1:4]
try:
    doc = json.load(open(path))
except Exception as e:
    sys.exit(f"{name}: answer is not JSON: {e}")
resp = doc.get("response") or {}
if doc.get("kind") != "AdmissionReview" or resp.get("uid") != uid or "allowed" not in resp:
    sys.exit(f"{name}: answer lacks kind/response.uid/allowed: {open(path).read()[:400]}")
EOF
  local reuse="reused"
  [[ $conns == "1 0 " ]] || reuse="NOT reused (num_connects: $conns)"
  echo "sanity $name: 200, uid echoed, $(wc -c <"$r1" | tr -d ' ') B answer, keep-alive connection $reuse" >&2
}

# ---- the controls (--controls): what they answer, on one keep-alive connection --------------
# sanity_controls CURL-TLS-ARGS...: the no-plan body passes sanity and is allowed with no patch
# (it asks for no GPU, so its plan places nothing); the no-review path is answered 404 twice on
# one connection (the first body was read off the socket, and the connection kept).
sanity_controls() {
  sanity no-plan "$gpuadmit_url" "$control_body" "$@"
  "$python" - "$workdir/no-plan-answer1.json" <<'EOF' || die "no-plan control: $(basename -- "$control_body") is not answered as a pod with nothing to plan"
import json, sys
resp = json.load(open(sys.argv[1])).get("response") or {}
if resp.get("allowed") is not True or "patch" in resp:
    sys.exit(f"want allowed and no patch, got: {json.dumps(resp)[:400]}")
EOF
  info=$(curl -sS --max-time 10 "$@" -H 'Content-Type: application/json' --data-binary "@$body" \
    -w '%{http_code} %{num_connects}\n' -o /dev/null "$no_review_url" -o /dev/null "$no_review_url" \
    2>"$workdir/no-review-curl.err") || { cat "$workdir/no-review-curl.err" >&2; die "no-review control: POST $no_review_url failed"; }
  [[ $info == $'404 1\n404 0' ]] \
    || die "no-review control: POST $no_review_url twice answered $(tr '\n' ' ' <<<"$info")(want 404 on one kept connection)"
  echo "sanity controls: no-plan answered allowed without a patch; no-review answered 404 twice on one kept connection" >&2
}

# Requests sent to each server over the run, warm-ups included (--callgrind divides by them).
declare -A load_sent=()

# ---- one measured point --------------------------------------------------------
# point SERVER URL CONC [RATE ROUND] -> appends one JSON line to $out and echoes it. With RATE,
# open loop at RATE req/s over CONC connections, round ROUND of --rounds; the point is named by
# its rate.
point() {
  local server=$1 url=$2 c=$3 rate=${4:-} round=${5:-1} send=${6:-$body} threads result key name
  threads=$((c < client_threads ? c : client_threads))
  name="c=$c"
  [[ -n $rate ]] && name="rate=$rate"
  if [[ $client == gpuadmit_load ]]; then
    key=load
    local rate_args=() cpu_args=() pid
    # Open loop: the window's latencies too, pooled per server and rate after the last round.
    [[ -n $rate ]] && rate_args=(--rate "$rate" --latencies "$workdir/latencies/${server//:/_}-$rate-$round")
    # The server's CPU time over the window: nginx's master and workers, or the gpuadmit
    # started here (not one behind --target-url, whose process is not known here).
    if [[ $server == nginx ]]; then
      for pid in "$nginx_pid" $(pgrep -P "$nginx_pid" || true); do
        cpu_args+=(--server-pid "$pid")
      done
    elif [[ $start_gpuadmit == 1 ]]; then
      cpu_args=(--server-pid "$gpuadmit_pid")
    fi
    if ! ${client_prefix[@]+"${client_prefix[@]}"} "$load_client" --url "$url" --body "$send" \
      --connections "$c" --threads "$threads" --warmup "$warmup" --duration "$duration" \
      --timeout 2 ${rate_args[@]+"${rate_args[@]}"} ${cpu_args[@]+"${cpu_args[@]}"} \
      >"$workdir/load.out" 2>&1; then
      cat "$workdir/load.out" >&2
      die "gpuadmit_load failed for $server $name"
    fi
    result=$(sed -n 's/^LOAD_RESULT //p' "$workdir/load.out" | tail -n 1)
    [[ -n $result ]] || { cat "$workdir/load.out" >&2; die "gpuadmit_load printed no LOAD_RESULT line for $server $name"; }
    [[ -n $rate ]] && load_sent[$server]=$((${load_sent[$server]:-0} + rate * (warmup + duration)))
  else
    key=wrk
    if ((warmup > 0)); then
      GPUADMIT_LOAD_BODY=$body GPUADMIT_LOAD_STRICT=$strict ${client_prefix[@]+"${client_prefix[@]}"} wrk -t"$threads" -c"$c" \
        -d"${warmup}s" --latency --timeout 2s -s "$lua" "$url" >"$workdir/wrk-warmup.out" 2>&1 || true
    fi
    if ! GPUADMIT_LOAD_BODY=$body GPUADMIT_LOAD_STRICT=$strict ${client_prefix[@]+"${client_prefix[@]}"} wrk -t"$threads" -c"$c" \
      -d"${duration}s" --latency --timeout 2s -s "$lua" "$url" >"$workdir/wrk.out" 2>&1; then
      cat "$workdir/wrk.out" >&2
      die "wrk failed for $server c=$c"
    fi
    result=$(sed -n 's/^WRK_RESULT //p' "$workdir/wrk.out" | tail -n 1)
    [[ -n $result ]] || { cat "$workdir/wrk.out" >&2; die "wrk printed no WRK_RESULT line for $server c=$c"; }
  fi
  local line rate_fields=""
  [[ -n $rate ]] && rate_fields=$(printf '"mode":"open","rate":%d,"round":%d,' "$rate" "$round")
  line=$(printf '{"kind":"point","server":"%s",%s"conc":%d,"threads":%d,"duration_s":%d,"warmup_s":%d,"url":"%s","body_bytes":%d,"client":"%s","%s":%s}' \
    "$server" "$rate_fields" "$c" "$threads" "$duration" "$warmup" "$url" "${body_bytes_of[$send]}" "$client" "$key" "$result")
  printf '%s\n' "$line" >>"$out"
  "$python" -c 'import json, sys
d = json.loads(sys.argv[1]); w = d.get("wrk") or d["load"]; l = w["latency_us"]
cpu = ("  server CPU %.0f us/req" % w["server_cpu_us_per_request"]
       if "server_cpu_us_per_request" in w else "")
cpu += "  steal %.1f%%" % w["steal_pct"] if "steal_pct" in w else ""
if d.get("mode") == "open":
    print("  %-18s rate=%-5d %8.0f req/s  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms"
          "  errors %d  queued %d%s%s"
          % (d["server"], d["rate"], w["rps"], l["p50"] / 1e3, l["p99"] / 1e3, l["p999"] / 1e3,
             l["max"] / 1e3, w["errors"]["total"], w["queued"], cpu,
             "  (round %d of %s)" % (d["round"], sys.argv[2]) if sys.argv[2] != "1" else ""))
else:
    print("  %-9s c=%-4d %10.0f req/s  p50 %.3f ms  p99 %.3f ms  max %.3f ms  errors %d%s"
          % (d["server"], d["conc"], w["rps"], l["p50"] / 1e3, l["p99"] / 1e3, l["max"] / 1e3,
             w["errors"]["total"], cpu))' \
    "$line" "$rounds" >&2
}

# ---- machine / versions ------------------------------------------------------------
bytes_of() { "$python" -c 'import sys; print(len(open(sys.argv[1],"rb").read().rstrip()))' "$1"; }
body_bytes=$(bytes_of "$body")
# The size of each body a point may send, read once.
declare -A body_bytes_of=(["$body"]=$body_bytes)
[[ $controls == 0 ]] || body_bytes_of["$control_body"]=$(bytes_of "$control_body")
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
[[ -n $cpu_model ]] || cpu_model=unknown
ncpu=$(nproc)
if [[ $client == wrk ]]; then
  wrk_version=$( (wrk -v 2>&1 || true) | head -n 1)
else
  wrk_version="gpuadmit_load ($load_client)"
fi
nginx_version=""
if [[ $run_nginx == 1 ]]; then
  nginx_version=$("$nginx_bin" -v 2>&1 | head -n 1)
fi
openssl_version=$(openssl version)
git_rev=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
if [[ -n $(git -C "$REPO_ROOT" status --porcelain 2>/dev/null || true) ]]; then git_rev="$git_rev+dirty"; fi

echo "machine:  $ncpu CPUs, $cpu_model, kernel $(uname -r)"
echo "versions: ${nginx_version:-nginx not run} | $wrk_version | $openssl_version | gpuadmit @ $git_rev"
if [[ $mode == open ]]; then
  echo "load:     POST $(basename -- "$body") ($body_bytes B), ${duration}s per point + ${warmup}s warm-up, open loop at ${rate_list[*]} req/s x $rounds round(s), $client --connections $rate_connections --threads $((rate_connections < client_threads ? rate_connections : client_threads)) --timeout 2s"
else
  echo "load:     POST $(basename -- "$body") ($body_bytes B), ${duration}s per point + ${warmup}s warm-up, c = ${conc_list[*]}, $client -t min(c,$client_threads) --timeout 2s"
fi
[[ -n $server_cpus ]] && echo "pinning:  servers on CPUs $server_cpus"
[[ -n $client_cpus ]] && echo "pinning:  $client on CPUs $client_cpus"

"$python" - "$out" \
  date_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)" nproc="$ncpu" cpu_model="$cpu_model" kernel="$(uname -r)" \
  nginx="$nginx_version" wrk="$wrk_version" client="$client" openssl="$openssl_version" git="$git_rev" \
  duration_s="$duration" warmup_s="$warmup" conc="${conc_list[*]}" body="$(basename -- "$body")" \
  body_bytes="$body_bytes" server_cpus="$server_cpus" client_cpus="$client_cpus" client_threads="$client_threads" \
  strict_status="$strict" target_url="$target_url" mode="$mode" rate="${rate_list[*]}" \
  rate_connections="$rate_connections" rounds="$rounds" <<'EOF'
import json, sys
meta = {"kind": "meta"}
for arg in sys.argv[2:]:
    k, _, v = arg.partition("=")
    meta[k] = v
for k in ("nproc", "duration_s", "warmup_s", "body_bytes", "client_threads", "rate_connections",
          "rounds"):
    meta[k] = int(meta[k])
meta["conc"] = [int(c) for c in meta["conc"].split()] if meta["mode"] == "closed" else []
meta["rate"] = [int(r) for r in meta["rate"].split()]
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(meta) + "\n")
EOF

# ---- start servers -----------------------------------------------------------------
make_certs
nginx_url=""
gpuadmit_url=""
if [[ $run_nginx == 1 ]]; then
  nginx_port=$(free_port)
  start_nginx "$nginx_port"
  nginx_url="https://127.0.0.1:$nginx_port/mutate"
  sanity nginx "https://127.0.0.1:$nginx_port/mutate-check" "$body" --cacert "$ca_crt"
  # nginx must read the whole body off the socket, or the 2nd request on the
  # connection would start inside the 1st body and fail to parse.
  if ! grep -q '^200 2 ' "$workdir/nginx/check.log"; then
    cat "$workdir/nginx/check.log" >&2
    die "nginx did not answer 200 to a 2nd POST on the same connection: body not consumed?"
  fi
  echo "sanity nginx: 2nd POST on the same connection answered 200 (1st body consumed off the socket)" >&2
fi
if [[ $run_gpuadmit == 1 ]]; then
  if [[ -n $target_url ]]; then
    target_url=${target_url%/}
    case $target_url in
      https://*/*) gpuadmit_url=$target_url ;;
      https://*) gpuadmit_url="$target_url/mutate" ;;
      *) usage_error "--target-url must start with https://" ;;
    esac
    sanity gpuadmit "$gpuadmit_url" "$body" -k
    gpuadmit_tls=(-k)
  else
    gpuadmit_port=$(free_port)
    start_gpuadmit "$gpuadmit_port"
    gpuadmit_url="https://127.0.0.1:$gpuadmit_port/mutate"
    sanity gpuadmit "$gpuadmit_url" "$body" --cacert "$ca_crt"
    gpuadmit_tls=(--cacert "$ca_crt")
  fi
fi

if [[ $controls == 1 ]]; then
  [[ $gpuadmit_url =~ ^(https://[^/]+) ]] || die "cannot find the host of $gpuadmit_url"
  no_review_url="${BASH_REMATCH[1]}/gpuadmit-load-no-review"
  sanity_controls "${gpuadmit_tls[@]}"
fi

# ---- measure: per concurrency (or rate) nginx then gpuadmit ------------------------------
for ((round = 1; round <= rounds; round++)); do
  for r in ${rate_list[@]+"${rate_list[@]}"}; do
    if [[ $run_nginx == 1 ]]; then
      point nginx "$nginx_url" "$rate_connections" "$r" "$round"
      kill -0 "$nginx_pid" 2>/dev/null || { show_log "$workdir/nginx/error.log"; die "nginx exited during rate=$r"; }
    fi
    if [[ $run_gpuadmit == 1 ]]; then
      point gpuadmit "$gpuadmit_url" "$rate_connections" "$r" "$round"
      if [[ $controls == 1 ]]; then
        point gpuadmit:no-plan "$gpuadmit_url" "$rate_connections" "$r" "$round" "$control_body"
        point gpuadmit:no-review "$no_review_url" "$rate_connections" "$r" "$round"
      fi
      if [[ $start_gpuadmit == 1 ]] && ! kill -0 "$gpuadmit_pid" 2>/dev/null; then
        show_log "$workdir/gpuadmit.log"
        die "gpuadmit exited during rate=$r (partial results in $out)"
      fi
    fi
  done
done
[[ $mode == open ]] && conc_list=()
for c in ${conc_list[@]+"${conc_list[@]}"}; do
  if [[ $run_nginx == 1 ]]; then
    point nginx "$nginx_url" "$c"
    kill -0 "$nginx_pid" 2>/dev/null || { show_log "$workdir/nginx/error.log"; die "nginx exited during c=$c"; }
  fi
  if [[ $run_gpuadmit == 1 ]]; then
    point gpuadmit "$gpuadmit_url" "$c"
    if [[ $start_gpuadmit == 1 ]] && ! kill -0 "$gpuadmit_pid" 2>/dev/null; then
      show_log "$workdir/gpuadmit.log"
      die "gpuadmit exited during c=$c (partial results in $out)"
    fi
  fi
done

# ---- pooled: every round's latencies of a server and rate, percentiles taken once -----------
# Short rounds, alternated, spread a noisy minute of the host over both servers; the percentiles
# of the pooled latencies then weigh each round by its requests, where a median of per-round
# ratios lets one round's burst decide. Same nearest-rank percentiles as gpuadmit_load.
if [[ $mode == open ]]; then
  "$python" - "$workdir/latencies" "$out" <<'EOF'
import collections, json, math, os, sys
folder, out = sys.argv[1], sys.argv[2]
pools = collections.defaultdict(list)
rounds = collections.defaultdict(int)
for name in sorted(os.listdir(folder)):
    server, rate, _ = name.rsplit("-", 2)
    key = (server.replace("_", ":"), int(rate))
    rounds[key] += 1
    with open(os.path.join(folder, name)) as f:
        pools[key].extend(int(line) for line in f)

def percentile(values, p):
    rank = math.ceil(p * len(values) / 100 - 1e-6)
    return values[min(max(rank, 1), len(values)) - 1]

with open(out, "a") as f:
    for (server, rate), values in sorted(pools.items()):
        if not values:
            continue
        values.sort()
        f.write(json.dumps({"kind": "pooled", "server": server, "rate": rate,
                            "rounds": rounds[(server, rate)], "requests": len(values),
                            "latency_us": {"p50": percentile(values, 50),
                                           "p99": percentile(values, 99),
                                           "p999": percentile(values, 99.9),
                                           "max": values[-1]}}) + "\n")
EOF
fi

# ---- --callgrind: the servers stopped (valgrind writes its counts as each exits), then per request
if [[ $callgrind == 1 ]]; then
  [[ $run_nginx == 0 ]] || stop_pid "$nginx_pid"
  [[ $run_gpuadmit == 0 ]] || stop_pid "$gpuadmit_pid"
  "$python" - "$workdir/callgrind" "$out" "nginx=${load_sent[nginx]:-0}" \
    "gpuadmit=${load_sent[gpuadmit]:-0}" <<'EOF' || die "could not read callgrind's counts in $workdir/callgrind"
import json, os, sys
folder, out = sys.argv[1], sys.argv[2]
sent = dict(arg.split("=") for arg in sys.argv[3:])
totals = {}
for name in sorted(os.listdir(folder)):
    if not name.startswith("callgrind."):
        continue
    cmd, events, counts = "", None, None
    with open(os.path.join(folder, name)) as f:
        for line in f:
            if line.startswith("cmd:"):
                cmd = line.split()[1]
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:"):
                counts = [int(v) for v in line.split()[1:]]
    if events is None or counts is None:
        sys.exit(f"{name}: no events or totals line (did valgrind finish writing it?)")
    server = "nginx" if "nginx" in os.path.basename(cmd) else "gpuadmit"
    mine = totals.setdefault(server, dict.fromkeys(events, 0))
    for event, count in zip(events, counts):
        mine[event] += count
rows = {}
with open(out, "a") as f:
    for server in ("nginx", "gpuadmit"):
        if server not in totals or int(sent[server]) == 0:
            continue
        n, t = int(sent[server]), totals[server]
        rows[server] = {"instructions": t["Ir"] / n, "code_lines": t["I1mr"] / n,
                        "data_lines": (t["D1mr"] + t["D1mw"]) / n}
        f.write(json.dumps({"kind": "callgrind", "server": server, "requests": n,
                            "per_request": rows[server]}) + "\n")
print()
print("callgrind: per request served, the event loop's counts (64-byte lines missed in L1i/L1d)")
print(f"{'server':<10}{'instructions':>14}{'code_lines':>12}{'data_lines':>12}")
for server, r in rows.items():
    print(f"{server:<10}{r['instructions']:>14,.0f}{r['code_lines']:>12,.0f}{r['data_lines']:>12,.0f}")
if len(rows) == 2:
    g, x = rows["gpuadmit"], rows["nginx"]
    print(f"{'ratio':<10}{g['instructions'] / x['instructions']:>14.2f}"
          f"{g['code_lines'] / x['code_lines']:>12.2f}{g['data_lines'] / x['data_lines']:>12.2f}")
print("(the latencies and CPU times below were taken under valgrind: they are not the servers')")
EOF
fi

# ---- report -----------------------------------------------------------------------------
echo
"$python" "$SCRIPT_DIR/summarize.py" "$out"
echo
echo "raw results: $out"
