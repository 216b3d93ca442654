#!/usr/bin/env bash
# build/gpuadmit is laid out by cmake/bolt-layout.sh: BOLT's note in the binary, the serving and
# review code among the functions the training ran, symbols kept and debug information dropped,
# and the layout deterministic (the script run twice on the linked binary, in two directories,
# gives one file: what the image's one-digest guarantee rests on).
#   tests/image/bolt_layout_test.sh BUILD/gpuadmit SOURCE_DIR BOLT_BIN_DIR
set -euo pipefail
binary=$1
src=$2
tools=$3
linked=$binary.bolt/gpuadmit.linked
failures=0
pass() { echo "PASS  $*"; }
fail() {
  echo "FAIL  $*"
  failures=$((failures + 1))
}

# check PASS FAIL COMMAND...: PASS when COMMAND succeeds, else FAIL.
check() {
  local ok=$1 ko=$2
  shift 2
  if "$@"; then pass "$ok"; else fail "$ko"; fi
}
# has_section FILE PATTERN: FILE has a section whose name matches PATTERN; no_section, none.
has_section() { readelf -S "$1" | grep -- "$2" >/dev/null; }
no_section() { ! has_section "$@"; }
note_names() { readelf -p .note.bolt_info "$1" 2>/dev/null | grep -- "$2" >/dev/null; }
has_symbol() { nm -C "$1" | grep -- "$2" >/dev/null; }

# The build kept the linker's layout (cmake/bolt-layout.sh failed and said why): nothing to check
# but that it says so; reported as skipped (77), not passed.
if [ -f "$binary.bolt/FAILED" ]; then
  echo "SKIP  the build kept the linker's layout: $(cat "$binary.bolt/FAILED")"
  exit 77
fi

check "build/gpuadmit carries BOLT's note with the layout's options" \
  "build/gpuadmit has no .note.bolt_info naming -reorder-blocks=ext-tsp" \
  note_names "$binary" "-reorder-blocks=ext-tsp"
check "the blocks no training request ran are in .text.cold" \
  "no .text.cold section: nothing was split" has_section "$binary" '\.text\.cold'
check "symbols kept" "no symbols in build/gpuadmit" has_symbol "$binary" ' gpuadmit::Review('
check "debug information dropped (gpuadmit.linked has it)" \
  "build/gpuadmit keeps debug information that describes the linker's layout" \
  no_section "$binary" '\.debug_info'
check "the linked binary keeps its relocations (--emit-relocs)" \
  "$linked has no .rela.text: BOLT cannot move whole functions" has_section "$linked" '\.rela\.text'

# The training served reviews: the event loop's, the review's and the log line's functions have
# counts in the profile.
profile=$binary.bolt/profile.fdata
counts() { c++filt <"$profile" | grep -- " $1(" >/dev/null; }
for fn in gpuadmit::EventLoop::Run gpuadmit::TlsConnection::ServeComplete gpuadmit::Review \
  gpuadmit::Plan gpuadmit::AppendPatch gpuadmit::AdmissionHandler::Handle gpuadmit::Logger::Log; do
  check "the profile counts $fn" "the profile has no counts for $fn" counts "$fn"
done
version=$("$binary" version | head -1)
if [[ $version == "gpuadmit "* ]]; then
  pass "the laid-out binary runs: $version"
else
  fail "gpuadmit version printed '$version'"
fi

# Deterministic: twice, each in its own directory, from the same linked binary.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
  mkdir "$tmp/$run"
  cp "$linked" "$tmp/$run/gpuadmit"
  "$src/cmake/bolt-layout.sh" "$tmp/$run/gpuadmit" "$tools" "$src" 2>"$tmp/$run.err" ||
    { cat "$tmp/$run.err"; fail "cmake/bolt-layout.sh failed"; }
  if [ -f "$tmp/$run/gpuadmit.bolt/FAILED" ]; then
    cat "$tmp/$run.err"
    fail "layout $run fell back to the linker's: $(cat "$tmp/$run/gpuadmit.bolt/FAILED")"
  fi
done
check "two layouts of one linked binary are one file" "two layouts of one linked binary differ" \
  cmp -s "$tmp/a/gpuadmit" "$tmp/b/gpuadmit"
check "and the same file as build/gpuadmit" "a layout made here differs from build/gpuadmit" \
  cmp -s "$tmp/a/gpuadmit" "$binary"
if [ "$failures" -eq 0 ]; then echo "every layout check passed"; else echo "$failures failed"; fi
exit $((failures > 0))
