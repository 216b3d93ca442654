#!/usr/bin/env bash
# The gpuadmit binary's code laid out by what a review runs (llvm-bolt, Debian's bolt-16), in
# place: cmake/bolt.cmake runs it after every link of build/gpuadmit.
#   cmake/bolt-layout.sh BINARY BOLT_BIN_DIR SOURCE_DIR
#
# 1. instrument the linked binary (linked with --emit-relocs, so whole functions can move);
# 2. train: the instrumented binary answers each review of the training set below with
#    `gpuadmit review` (the handler serve uses), each writing its edge counts at exit;
# 3. lay out: the blocks each function ran, in the order they ran, packed into a hot section; the
#    blocks no review ran into a cold one; functions ordered by their calls (hfsort).
#
# A review's distinct code is mostly inlined standard-library code whose untaken branches lie
# between the taken ones; packed, a served review touches about a fifth fewer 64-byte code lines
# (docs/performance.md, "seventeenth session").
#
# The laid-out binary keeps its symbols but not its debug information, which would describe the
# linker's layout: debug with $BINARY.bolt/gpuadmit.linked, the same code as linked, or configure
# with -DGPUADMIT_BOLT=OFF.
#
# Deterministic: the training is single-threaded and reads files only, so one binary and one
# source tree give one profile and one output (BOLT writes its command line into the binary, so
# it runs here with relative paths). On a failure the linked binary is removed, so that the next
# build links again rather than keeping a binary that was not laid out.
set -euo pipefail
binary=$1
tools=$2
src=$3

work=$binary.bolt
trap 'rm -f "$binary"; echo "cmake/bolt-layout.sh: failed; $binary removed (see $work)" >&2' ERR
rm -rf "$work"
mkdir -p "$work"
mv "$binary" "$work/gpuadmit.linked"
cd "$work"

quiet() {  # runs "$@", showing its output only when it fails
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}

quiet instrument.log "$tools/llvm-bolt" gpuadmit.linked -instrument -o gpuadmit.instrumented \
  --instrumentation-file=profile --instrumentation-file-append-pid

# The training set: a MIG pod placed (the benchmarks' review), the same pod without its GPU, a
# whole-GPU pod, a Deployment's template. The example policy and the demo cluster, as `make run`.
reviews=(
  bench/fixtures/pod-review-3k.json
  bench/fixtures/pod-review-cpu-3k.json
  tests/fixtures/gpu/kubectl-pod-whole-gpu.json
  tests/fixtures/gpu/kubectl-deployment.json
)
for review in "${reviews[@]}"; do
  quiet train.log ./gpuadmit.instrumented review --policy "$src/manifests/examples/policy.yaml" \
    --cluster "$src/manifests/examples/demo-cluster.json" "$src/$review"
done
profiles=(profile.*.fdata)
[ "${#profiles[@]}" -eq "${#reviews[@]}" ] || {
  echo "cmake/bolt-layout.sh: ${#reviews[@]} reviews wrote ${#profiles[@]} profiles" >&2
  false
}
"$tools/merge-fdata" "${profiles[@]}" >profile.fdata 2>merge.log

quiet layout.log "$tools/llvm-bolt" gpuadmit.linked -o gpuadmit -data=profile.fdata \
  -reorder-blocks=ext-tsp -reorder-functions=hfsort -split-functions -split-all-cold -split-eh \
  -use-gnu-stack
# The debug information still describes the linker's layout (BOLT 16's rewrite of it is one that
# valgrind 3.19 cannot read): dropped, the symbols kept. gpuadmit.linked, beside this, is the same
# code with it, for gdb.
objcopy --strip-debug gpuadmit
chmod 0755 gpuadmit  # BOLT writes 0777 less the umask
mv gpuadmit "$binary"
rm -f gpuadmit.instrumented profile.*.fdata
