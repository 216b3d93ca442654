#!/bin/sh
# Runs every libFuzzer target for SECONDS (default 60) each, two at a time, on a corpus seeded
# from the recorded fixtures, and prints one line per target: executions, corpus size, findings.
# A crash, leak, sanitizer report or timeout fails the run and leaves the reproducer in
# $OUT/<target>/ (default a temporary directory, kept on failure).
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]  (FUZZ_JOBS=N: targets at once, default 2;
#                                                      no TARGET: all of them)
set -eu
build=$(cd "$1" && pwd)
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))
targets=${*:-review policy kubeconfig prometheus watch_event http_request}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$(mktemp -d /tmp/gpuadmit-fuzz.XXXXXX)}
mkdir -p "$out"

seed() {  # seed TARGET DIR...: copy seed files into $out/TARGET/seeds
  target=$1; shift
  mkdir -p "$out/$target/corpus" "$out/$target/seeds"
  for d in "$@"; do
    [ -e "$d" ] && find "$d" -maxdepth 1 -type f -exec cp {} "$out/$target/seeds/" \;
  done
  return 0
}
seed review "$src/tests/fixtures/admission" "$src/tests/fixtures/bad" "$src/tests/fixtures/gpu" \
  "$src/bench/fixtures" \
  "$src/tests/fuzz/seeds/review"  # earlier findings, kept as regressions
seed policy "$src/manifests/examples" "$src/tests/fuzz/seeds/policy"
rm -f "$out/policy/seeds/"*.json  # the demo cluster is not a policy
seed kubeconfig "$src/tests/fuzz/seeds/kubeconfig"
seed prometheus "$src/tests/fuzz/seeds/prometheus" "$src/tests/fixtures/dcgm"
# A watch-event input is a selector byte (even: pods, odd: nodes) and one line of a stream.
seed http_request "$src/tests/fuzz/seeds/http_request"
seed watch_event "$src/tests/fuzz/seeds/watch_event"  # earlier findings, kept as regressions
n=0
while IFS= read -r line; do
  n=$((n + 1)); printf '0%s' "$line" > "$out/watch_event/seeds/pod-$n.json"
done < "$src/tests/fixtures/watch/watch-pods-added-modified-deleted-2015.jsonl"
{ printf '1'; tr -d '\n' < "$src/tests/fixtures/watch/watch-node-added-event-openshift-2017.json"; } \
  > "$out/watch_event/seeds/node-1.json"

run() {  # run TARGET: fuzz for $seconds; the log is $out/TARGET/log
  target=$1
  ( cd "$out/$target" &&
    "$build/tests/fuzz/gpuadmit_fuzz_$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/$target/" \
      corpus seeds > log 2>&1 )
}

status=0
jobs=${FUZZ_JOBS:-2}  # targets fuzzed at once
set -- $targets
while [ $# -gt 0 ]; do
  pids=""
  n=0
  while [ $# -gt 0 ] && [ $n -lt "$jobs" ]; do
    run "$1" & pids="$pids $!"
    shift; n=$((n + 1))
  done
  for pid in $pids; do wait "$pid" || status=1; done
done

for target in $targets; do
  log="$out/$target/log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$out/$target/corpus" -type f | wc -l)
  findings=$(find "$out/$target" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
    -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
  echo "fuzz $target: ${seconds}s, ${execs:-?} executions, $corpus new corpus inputs, $findings findings"
  if [ "$findings" -ne 0 ] || grep -q 'ERROR: \(AddressSanitizer\|libFuzzer\)\|runtime error' "$log"; then
    status=1
    echo "  see $log"; tail -30 "$log" | sed 's/^/  | /'
  fi
done
if [ "$status" -eq 0 ] && [ -z "${OUT:-}" ]; then rm -rf "$out"; fi
exit $status
