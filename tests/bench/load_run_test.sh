#!/usr/bin/env bash
# load_run_test.sh: a short run of bench/load/run.sh (the HTTPS load benchmark of `make bench`)
# with each load client, so the benchmark cannot rot unnoticed between measurements.
#
# Usage: tests/bench/load_run_test.sh GPUADMIT GPUADMIT_LOAD [REPO_ROOT]
#
# Checks, one line each: both servers measured at every concurrency with no error, the client
# threads as asked (--client-threads), the summary printed; open-loop runs (--rate, one round
# and two) whose points carry the open-loop fields with every scheduled request answered, sane
# latencies and the servers' CPU time per request, summarised per round, by median and pooled
# (every round's latencies, percentiles taken once); the two controls of --controls measured and
# summarised; --callgrind's counts per request for both servers; bad options refused with exit
# 2; the CPU-only control answered as nginx answers it; and nothing left behind (processes or
# temporary files).
# Hermetic: loopback, free ports, a private TMPDIR. Needs wrk, nginx-light, curl, openssl and
# valgrind (all in the Makefile's DEBS). Exit status: 0 all passed, 1 a check failed, 77 wrk,
# nginx or valgrind is absent (skipped).
set -uo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gpuadmit="${1:?usage: load_run_test.sh GPUADMIT GPUADMIT_LOAD [REPO_ROOT]}"
load_client="${2:?usage: load_run_test.sh GPUADMIT GPUADMIT_LOAD [REPO_ROOT]}"
repo="$(cd "${3:-${script_dir}/../..}" && pwd)" || exit 1
run="${repo}/bench/load/run.sh"

for tool in wrk /usr/sbin/nginx valgrind; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "SKIP: ${tool} not found (apt-get install wrk nginx-light valgrind)"
    exit 77
  fi
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpuadmit-load-run-test.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
mkdir "${tmp}/t"

passed=0
failed=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1"; failed=$((failed + 1)); }

# points FILE CLIENT THREADS CONCS...: the results file holds a meta line with CLIENT_THREADS, and
# one point per server and concurrency with requests, no error and min(c, THREADS) threads.
points() {
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
path, client, threads, concs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
lines = [json.loads(l) for l in open(path)]
meta = [l for l in lines if l["kind"] == "meta"]
if len(meta) != 1 or meta[0]["client"] != client or meta[0]["client_threads"] != threads:
    sys.exit(f"meta line: {meta}")
want = {(s, int(c)) for s in ("nginx", "gpuadmit") for c in concs}
got = {(l["server"], l["conc"]): l for l in lines if l["kind"] == "point"}
if set(got) != want:
    sys.exit(f"points {sorted(got)}, want {sorted(want)}")
for (server, c), p in got.items():
    r = p.get("load") or p.get("wrk")
    if p["threads"] != min(c, threads):
        sys.exit(f"{server} c={c}: {p['threads']} threads, want {min(c, threads)}")
    if r["requests"] <= 0 or r["errors"]["total"] != 0:
        sys.exit(f"{server} c={c}: {r['requests']} requests, errors {r['errors']}")
EOF
}

# measure NAME CLIENT THREADS "CONCS": one run.sh run, checked.
measure() {
  local name="$1" client="$2" threads="$3" concs="$4" out="${tmp}/$1.jsonl" log="${tmp}/$1.log"
  if ! TMPDIR="${tmp}/t" "${run}" --gpuadmit "${gpuadmit}" --load-client "${load_client}" \
      --client "${client}" --client-threads "${threads}" --conc "${concs}" --duration 1 \
      --warmup 0 --out "${out}" >"${log}" 2>&1; then
    fail "${name}: run.sh failed"
    tail -n 20 "${log}"
    return
  fi
  local why
  if ! why="$(points "${out}" "${client}" "${threads}" ${concs} 2>&1)"; then
    fail "${name}: ${why}"
    return
  fi
  if ! grep -q "^ratio gpuadmit/nginx throughput:" "${log}"; then
    fail "${name}: no summary"
    tail -n 20 "${log}"
    return
  fi
  pass "${name}: both servers at c = ${concs}, ${client} with at most ${threads} threads, no errors"
}

measure gpuadmit_load gpuadmit_load 1 "1 4"
measure wrk wrk 2 "4"

# open_points FILE RATE DURATION ROUNDS WANT_CPU WANT_STEAL: the meta line says open loop at RATE
# in ROUNDS rounds; each server has one point at RATE per round whose client result is open loop,
# every request of the window scheduled and answered (RATE x DURATION, no error), latencies in
# order and under the 2 s timeout, (with WANT_CPU 1) the server's CPU time over the window read,
# with its share per request, and (with WANT_STEAL 1) the host's steal over it, a percentage.
open_points() {
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
path, rate, duration, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want_cpu = sys.argv[5] == "1"
want_steal = sys.argv[6] == "1"
lines = [json.loads(l) for l in open(path)]
meta = [l for l in lines if l["kind"] == "meta"]
if (len(meta) != 1 or meta[0]["mode"] != "open" or meta[0]["rate"] != [rate]
        or meta[0]["rounds"] != rounds):
    sys.exit(f"meta line: {meta}")
points = {(l["server"], l["round"]): l for l in lines if l["kind"] == "point"}
pooled = {l["server"]: l for l in lines if l["kind"] == "pooled"}
want_points = sorted((s, k) for s in ("gpuadmit", "nginx") for k in range(1, rounds + 1))
if sorted(points) != want_points or len(lines) != len(points) + len(pooled) + 1:
    sys.exit(f"points for {sorted(points)}, want one for each of {want_points}")
# Every round's latencies pooled once per server: all of them, and each pooled percentile
# within the range of the rounds' own (as a percentile of a union must be).
if sorted(pooled) != ["gpuadmit", "nginx"]:
    sys.exit(f"pooled lines for {sorted(pooled)}, want gpuadmit and nginx")
for server, p in pooled.items():
    own = [points[(server, k)]["load"]["latency_us"] for k in range(1, rounds + 1)]
    if p["rate"] != rate or p["rounds"] != rounds or p["requests"] != rate * duration * rounds:
        sys.exit(f"{server} pooled: {p}; want {rounds} rounds, {rate * duration * rounds} requests")
    for key in ("p50", "p99", "p999", "max"):
        if not min(o[key] for o in own) <= p["latency_us"][key] <= max(o[key] for o in own):
            sys.exit(f"{server} pooled {key} {p['latency_us'][key]} outside the rounds' {own}")
for (server, _), p in points.items():
    r = p["load"]
    lat, lag = r["latency_us"], r["send_lag_us"]
    if p["mode"] != "open" or p["rate"] != rate or r["mode"] != "open" or r["rate"] != rate:
        sys.exit(f"{server}: not open loop at {rate}: {p}")
    want = rate * duration
    if r["scheduled"] != want or r["requests"] != want or r["errors"]["total"] != 0:
        sys.exit(f"{server}: {r['scheduled']} scheduled, {r['requests']} answered, errors "
                 f"{r['errors']}; want {want}, {want}, none")
    if abs(r["rps"] - rate) > 0.01 * rate:
        sys.exit(f"{server}: achieved {r['rps']} req/s, want {rate}")
    if not 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"] < 2000000:
        sys.exit(f"{server}: latencies out of order or over the timeout: {lat}")
    if not lag["p50"] <= lag["p99"] <= lag["max"] <= lat["max"] or r["queued"] > want:
        sys.exit(f"{server}: send lag {lag} or queued {r['queued']} out of bounds")
    # The host's steal over the window, wherever /proc/stat has the field (Linux 2.6.11 on).
    if want_steal and not 0 <= r.get("steal_pct", -1) <= 100:
        sys.exit(f"{server}: steal_pct {r.get('steal_pct')}, want a percentage")
    cpu, per = r.get("server_cpu_us"), r.get("server_cpu_us_per_request")
    if not want_cpu:
        continue
    if not cpu or not per or abs(per - cpu / want) > 0.1 + 0.001 * per:
        sys.exit(f"{server}: server CPU {cpu} us, {per} us a request; want both, the second "
                 f"the first over {want}")
EOF
}

# measure_open RATE DURATION ROUNDS: one open-loop run.sh run on both servers, checked.
measure_open() {
  local rate="$1" duration="$2" rounds="$3" out="${tmp}/open.jsonl" log="${tmp}/open.log"
  if ! TMPDIR="${tmp}/t" "${run}" --gpuadmit "${gpuadmit}" --load-client "${load_client}" \
      --rate "${rate}" --duration "${duration}" --rounds "${rounds}" --warmup 0 \
      --out "${out}" >"${log}" 2>&1; then
    fail "open loop: run.sh failed"
    tail -n 20 "${log}"
    return
  fi
  # The servers' CPU time comes from /proc/PID/task/TID/schedstat (CONFIG_SCHED_INFO, as in
  # Debian's kernels); where the kernel has none, gpuadmit_load leaves it out and so may the run.
  local want_cpu=0 cpu_line="^ratio gpuadmit/nginx p99.9 latency: "
  local cpu_said=", server CPU not checked (no schedstat)"
  if [[ -r /proc/self/schedstat ]]; then
    want_cpu=1
    cpu_line="^ratio gpuadmit/nginx server CPU per request: rate=${rate} "
    cpu_said=", server CPU read"
  fi
  local why
  local want_steal=0
  [[ $(awk 'NR == 1 { print NF }' /proc/stat) -ge 9 ]] && want_steal=1
  if ! why="$(open_points "${out}" "${rate}" "${duration}" "${rounds}" "${want_cpu}" \
      "${want_steal}" 2>&1)"; then
    fail "open loop: ${why}"
    return
  fi
  # One round: its ratio and verdict. Several: every round's ratio and their median, and the
  # verdict on the medians with the count of rounds that met the target alone.
  local ratios="[0-9.]+" verdict="(met|NOT met)$|(met|NOT met)  "
  if ((rounds > 1)); then
    ratios="([0-9.]+ ){${rounds}}\(median [0-9.]+\)"
    verdict="(met|NOT met) \(medians of ${rounds} rounds; [0-9]+ of ${rounds} met it alone\)"
  fi
  # Several rounds: the pooled percentiles' ratios and their verdict too, and where the steal was
  # read, the calm rounds' ratios.
  local pooled="^pooled: target p99 and p99.9 <= 1.25x nginx: rate=${rate} (met|NOT met)$"
  local calm="^calm rounds \(steal < 1% in both windows\), gpuadmit/nginx: rate=${rate} "
  calm+="(none of ${rounds}|[0-9]+ of ${rounds}: p99 .* met the target)$"
  ((rounds > 1)) || pooled="^target p99"
  ((rounds > 1 && want_steal == 1)) || calm="^target p99"
  if ! grep -Eq "^ratio gpuadmit/nginx p99.9 latency: rate=${rate} ${ratios}" "${log}" ||
      ! grep -Eq "^target p99 and p99.9 <= 1.25x nginx: rate=${rate} ${verdict}" "${log}" ||
      ! grep -Eq "${pooled}" "${log}" || ! grep -Eq "${calm}" "${log}" ||
      ! grep -q "${cpu_line}" "${log}"; then
    fail "open loop, ${rounds} round(s): no p99.9 ratio, CPU ratio, target, pooled or calm line as expected"
    tail -n 20 "${log}"
    return
  fi
  local said="open loop: both servers at ${rate} req/s for ${duration} s in ${rounds} round(s)"
  pass "${said}, every request answered, latencies in order, ratios summarised${cpu_said}"
}
measure_open 200 2 1
measure_open 200 2 2

# control_points FILE RATE DURATION: with --controls, one point per round for nginx, gpuadmit and
# both controls, each with every scheduled request answered; the no-plan control without error,
# the no-review control answered 404 every time (its errors are exactly its 404s).
control_points() {
  /usr/bin/python3 - "$@" <<'EOF'
import json, sys
path, rate, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = rate * duration
lines = [json.loads(l) for l in open(path)]
points = {l["server"]: l for l in lines if l["kind"] == "point"}
if sorted(l["server"] for l in lines if l["kind"] == "pooled") != sorted(points):
    sys.exit("no pooled line for every server")
servers = ["gpuadmit", "gpuadmit:no-plan", "gpuadmit:no-review", "nginx"]
if sorted(points) != servers:
    sys.exit(f"points for {sorted(points)}, want {servers}")
for server, p in points.items():
    r = p["load"]
    e = r["errors"]
    if r["scheduled"] != want or r["requests"] != want:
        sys.exit(f"{server}: {r['scheduled']} scheduled, {r['requests']} answered; want {want}")
    expected = want if server == "gpuadmit:no-review" else 0
    if e["total"] != expected or e["non2xx"] != expected:
        sys.exit(f"{server}: errors {e}, want {expected}, all of them non-2xx")
if points["gpuadmit:no-plan"]["body_bytes"] == points["gpuadmit"]["body_bytes"]:
    sys.exit("the no-plan control sent gpuadmit's body, not the control body")
EOF
}

# run.sh --controls: both controls measured after gpuadmit, and summarised like it.
controls_out="${tmp}/controls.jsonl"
controls_log="${tmp}/controls.log"
if ! TMPDIR="${tmp}/t" "${run}" --gpuadmit "${gpuadmit}" --load-client "${load_client}" \
    --rate 200 --duration 2 --warmup 0 --controls --out "${controls_out}" >"${controls_log}" 2>&1; then
  fail "controls: run.sh --controls failed"
  tail -n 20 "${controls_log}"
elif ! why="$(control_points "${controls_out}" 200 2 2>&1)"; then
  fail "controls: ${why}"
elif ! grep -q "^sanity controls: no-plan answered allowed without a patch" "${controls_log}" ||
    ! grep -Eq "^gpuadmit:no-review +200 .*\(the control's 404s\)$" "${controls_log}" ||
    ! grep -Eq "^ratio gpuadmit:no-plan/nginx p99 latency: rate=200 [0-9.]+$" "${controls_log}" ||
    ! grep -Eq "^gpuadmit:no-review against the target p99 and p99.9 <= 1.25x nginx: rate=200 (met|NOT met)$" \
      "${controls_log}"; then
  fail "controls: no sanity line, table line or ratio and verdict lines as expected"
  tail -n 30 "${controls_log}"
else
  pass "controls: no-plan and no-review measured after gpuadmit, every request answered, summarised"
fi

# run.sh --callgrind: both servers run under callgrind, and each one's counts per request come
# back (a JSON line per server, the table with its ratio line) from the requests actually sent.
callgrind_out="${tmp}/callgrind.jsonl"
callgrind_log="${tmp}/callgrind.log"
if ! TMPDIR="${tmp}/t" "${run}" --gpuadmit "${gpuadmit}" --load-client "${load_client}" \
    --callgrind --rate 20 --duration 2 --warmup 0 --rate-connections 2 --client-threads 1 \
    --out "${callgrind_out}" >"${callgrind_log}" 2>&1; then
  fail "callgrind: run.sh --callgrind failed"
  tail -n 20 "${callgrind_log}"
elif ! why="$(/usr/bin/python3 - "${callgrind_out}" 2>&1 <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
counts = {l["server"]: l for l in lines if l["kind"] == "callgrind"}
if sorted(counts) != ["gpuadmit", "nginx"]:
    sys.exit(f"want a callgrind line for each server, got {sorted(counts)}")
for server, line in counts.items():
    r = line["per_request"]
    if line["requests"] != 40:
        sys.exit(f"{server}: {line['requests']} requests counted, want 20 req/s x 2 s = 40")
    # A served request decrypts, parses and answers: thousands of instructions and hundreds of
    # code lines at the least, for either server.
    if not (r["instructions"] > 5000 and 50 < r["code_lines"] < r["instructions"] / 4):
        sys.exit(f"{server}: implausible counts {r}")
EOF
)"; then
  fail "callgrind: ${why}"
elif ! grep -Eq "^ratio +[0-9.]+ +[0-9.]+ +[0-9.]+$" "${callgrind_log}"; then
  fail "callgrind: no ratio line in the table"
  tail -n 20 "${callgrind_log}"
else
  pass "callgrind: both servers counted under valgrind, per request, with their ratios"
fi

# gpuadmit_load itself refuses a rate that is not a number, with its usage (which names --rate).
status=0
message="$("${load_client}" --url https://127.0.0.1:1/mutate --body /dev/null --rate fast 2>&1)" \
  || status=$?
if [[ ${status} -eq 2 && ${message} == *"--rate R"* ]]; then
  pass "gpuadmit_load refused --rate fast with its usage"
else
  fail "gpuadmit_load --rate fast: exit ${status}, want 2 and the usage: ${message}"
fi
# ... and a --server-pid that is not a process id.
for pid in 0 12x; do
  status=0
  message="$("${load_client}" --url https://127.0.0.1:1/mutate --body /dev/null \
    --server-pid "${pid}" 2>&1)" || status=$?
  if [[ ${status} -eq 2 && ${message} == *"--server-pid PID"* ]]; then
    pass "gpuadmit_load refused --server-pid ${pid} with its usage"
  else
    fail "gpuadmit_load --server-pid ${pid}: exit ${status}, want 2 and the usage: ${message}"
  fi
done

# usage ARGS...: run.sh refuses ARGS with exit status 2 and says why.
usage() {
  local status=0 message
  message="$(TMPDIR="${tmp}/t" "${run}" --gpuadmit "${gpuadmit}" "$@" 2>&1)" || status=$?
  if [[ ${status} -eq 2 && ${message} == run.sh:* ]]; then
    pass "refused: $* (${message%%$'\n'*})"
  else
    fail "$*: exit ${status}, want 2 with a reason: ${message}"
  fi
}
usage --client-threads 0
usage --client curl
usage --conc "8 x"
usage --rate 0
usage --rate "1000 5k"
usage --rate 100 --client wrk
usage --rate 100 --conc 8
usage --rate 100 --rounds 0
usage --rounds 2
usage --controls
usage --rate 100 --controls --only nginx
usage --rate 100 --controls --control-body "${tmp}/no-such-body.json"
usage --callgrind
usage --rate 100 --callgrind --controls

# The CPU-only control (bench/fixtures/pod-review-cpu-3k.json, docs/performance.md) is answered
# as nginx answers: allowed, no patch, in as many bytes. Were a policy change to patch it, the
# control would no longer cost gpuadmit a decode and no plan.
control="${repo}/bench/fixtures/pod-review-cpu-3k.json"
if answer="$("${gpuadmit}" review --policy "${repo}/manifests/examples/policy.yaml" \
     --cluster "${repo}/manifests/examples/demo-cluster.json" "${control}" \
     2>"${tmp}/control.err")" &&
   why="$(/usr/bin/python3 - "${answer}" "${repo}/bench/fixtures/nginx-response.json" 2>&1 <<'EOF'
import json, sys
answer, nginx = sys.argv[1], open(sys.argv[2]).read().strip()
if json.loads(answer) != json.loads(nginx) or len(answer.strip()) != len(nginx):
    sys.exit(f"gpuadmit answers {answer.strip()}, nginx {nginx}")
EOF
)"; then
  pass "the CPU-only control is answered as nginx answers it"
else
  fail "the CPU-only control: ${why:-$(cat "${tmp}/control.err")}"
fi

# Everything run.sh started is stopped, and its temporary directory removed.
left="$(ls -A "${tmp}/t")"
if [[ -z ${left} ]]; then
  pass "no temporary files left"
else
  fail "temporary files left: ${left}"
fi
if pgrep -f "${tmp}" >/dev/null; then
  fail "processes left: $(pgrep -af "${tmp}")"
else
  pass "no processes left"
fi

echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
