#!/usr/bin/env bash
# The gpuadmit binary's code laid out by what serving a review runs (llvm-bolt, Debian's bolt-16),
# in place: cmake/bolt.cmake runs it after every link of build/gpuadmit.
#   cmake/bolt-layout.sh BINARY BOLT_BIN_DIR SOURCE_DIR
#
# 1. instrument the linked binary (linked with --emit-relocs, so whole functions can move);
# 2. train: the instrumented binary serves the training reviews below to curl over TLS on
#    loopback, 2,000 requests on one kept-alive connection, and writes its edge counts when
#    it has stopped;
# 3. lay out: the blocks each function ran, in the order they ran, packed into a hot section; the
#    blocks no request ran into a cold one; functions ordered by their calls (hfsort).
#
# What a served review runs (the event loop, TLS reads and writes, the HTTP parser, the review,
# its log line) is mostly inlined standard-library code whose untaken branches lie between the
# taken ones; packed, a served review touches about a fifth fewer 64-byte code lines
# (docs/performance.md, "Complexity budget").
#
# The laid-out binary keeps its symbols but not its debug information, which would describe the
# linker's layout: debug with $BINARY.bolt/gpuadmit.linked, the same code as linked, or configure
# with -DGPUADMIT_BOLT=OFF.
#
# Deterministic: the counts are rounded per request (below), so that one binary and one source
# tree give one profile and one output (BOLT writes its command line into the binary, so it runs
# here with relative paths). The optimizer never breaks the build: when a step fails (BOLT, or
# the instrumented binary's training crashing), the linker's binary is put back in place, a
# warning says why, and $BINARY.bolt/FAILED keeps the reason (tests/image/bolt_layout_test.sh
# reports the layout skipped).
set -euo pipefail
binary=$1
tools=$2
src=$3

work=$binary.bolt
serve=  # the training's server while it runs
keep_linked() {  # the ERR trap: the linker's binary back in place, and why
  local step="line $1: $BASH_COMMAND"
  trap - ERR
  [ -z "$serve" ] || kill "$serve" 2>/dev/null || true
  cp "$work/gpuadmit.linked" "$binary"
  echo "failed at: $step" >"$work/FAILED"
  echo "cmake/bolt-layout.sh: WARNING: the layout failed ($step); $binary keeps the linker's" \
    "layout (see $work)" >&2
  exit 0
}
rm -rf "$work"
mkdir -p "$work"
mv "$binary" "$work/gpuadmit.linked"
trap 'keep_linked $LINENO' ERR
cd "$work"

quiet() {  # runs "$@", showing its output only when it fails
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}

within_10s() {  # runs "$@" every 0.1 s until it succeeds; fails after 10 s
  local _
  for _ in $(seq 100); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# Counters in shared memory, written by a watcher process when serve has exited (serve ends with
# _Exit, which skips the instrumentation's own write at exit); never cleared.
quiet instrument.log "$tools/llvm-bolt" gpuadmit.linked -instrument -o gpuadmit.instrumented \
  --instrumentation-file=profile --instrumentation-file-append-pid \
  --instrumentation-sleep-time=86400 --instrumentation-no-counters-clear

# The training set: a MIG pod placed (the benchmarks' review), the same pod without its GPU, a
# whole-GPU pod, a Deployment's template, each $repeat times over one kept-alive connection, as
# the apiserver sends them. The example policy and the demo cluster, as `make run`; a certificate
# made for this (cmake/bolt-train/). cmake/bolt.cmake lists these files as the link's
# dependencies: change one and the next build lays out again.
reviews=(
  bench/fixtures/pod-review-3k.json
  bench/fixtures/pod-review-cpu-3k.json
  tests/fixtures/gpu/kubectl-pod-whole-gpu.json
  tests/fixtures/gpu/kubectl-deployment.json
)
repeat=500
requests=$((${#reviews[@]} * repeat))
: >serve.log  # there before the loop below reads it (the background job opens it in its time)
./gpuadmit.instrumented serve --policy "$src/manifests/examples/policy.yaml" \
  --cluster "$src/manifests/examples/demo-cluster.json" --tls-cert "$src/cmake/bolt-train/tls.crt" \
  --tls-key "$src/cmake/bolt-train/tls.key" --listen 127.0.0.1:0 2>serve.log &
serve=$!
# Done when serve says which port it took, or when it has exited.
port_or_exit() {
  port=$(sed -n 's/.* msg=serving port=\([0-9]*\) .*/\1/p' serve.log)
  [ -n "$port" ] || ! kill -0 "$serve" 2>/dev/null
}
within_10s port_or_exit || true
[ -n "$port" ] || { cat serve.log >&2; echo "cmake/bolt-layout.sh: serve did not start" >&2; false; }
for review in "${reviews[@]}"; do
  echo next  # each group its own options
  echo "cacert = \"$src/cmake/bolt-train/tls.crt\""
  echo silent
  echo show-error
  echo fail
  echo 'header = "Content-Type: application/json"'
  echo 'header = "Expect:"'
  echo "data-binary = \"@$src/$review\""
  for _ in $(seq "$repeat"); do
    echo "url = \"https://127.0.0.1:$port/mutate\""
    echo "output = /dev/null"
  done
done | sed 1d >requests.conf
quiet curl.log curl --config requests.conf
kill -TERM "$serve"
wait "$serve" || { cat serve.log >&2; false; }
serve=
# The watcher sees serve gone within a second and writes the counters to profile.<its pid>.fdata.
profile_written() {
  profiles=(profile.*.fdata)
  [ -e "${profiles[0]}" ]
}
within_10s profile_written || { echo "cmake/bolt-layout.sh: no profile was written" >&2; false; }
watcher=${profiles[0]#profile.}
watcher=${watcher%.fdata}
watcher_done() {  # gone, or a zombie (a watcher nobody reaps stays one)
  local state
  state=$(sed 's/.*) //' "/proc/$watcher/stat" 2>/dev/null | cut -d' ' -f1) || true
  [ -z "$state" ] || [ "$state" = Z ]
}
within_10s watcher_done || {
  echo "cmake/bolt-layout.sh: the profile watcher $watcher did not finish" >&2
  false
}
mv "${profiles[0]}" training.fdata  # the counts as they came, kept to look at

# Counts per request, in sixteenths, so that two trainings give one profile. What a request
# runs is the same each time; what timing decides (the log flush every 50 ms, the event loops'
# timer, the timestamp's new second) adds a few counts here and there, well under an eighth of a
# run per request: those edges are dropped, and the rest rounded, which a few counts more or
# less do not move. Measured: six trainings differed by at most 11 counts an edge (the event
# loop's wakeups), where a sixteenth of a request is 125.
awk -v requests="$requests" '$NF * 8 >= requests {
  $NF = int($NF * 16 / requests + 0.5)
  print
}' training.fdata >profile.fdata

quiet layout.log "$tools/llvm-bolt" gpuadmit.linked -o gpuadmit -data=profile.fdata \
  -reorder-blocks=ext-tsp -reorder-functions=hfsort -split-functions -split-all-cold -split-eh \
  -use-gnu-stack
# The debug information still describes the linker's layout (BOLT 16's rewrite of it is one that
# valgrind 3.19 cannot read): dropped, the symbols kept. gpuadmit.linked, beside this, is the same
# code with it, for gdb.
objcopy --strip-debug gpuadmit
chmod 0755 gpuadmit  # BOLT writes 0777 less the umask
mv gpuadmit "$binary"
rm -f gpuadmit.instrumented
