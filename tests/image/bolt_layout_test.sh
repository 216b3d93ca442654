#!/usr/bin/env bash
# build/gpuadmit is laid out by cmake/bolt-layout.sh: BOLT's note in the binary, the review code
# among the functions the training ran, symbols kept and debug information dropped, and the
# layout deterministic (the script run twice on the linked binary, in two directories, gives one
# file: what the image's one-digest guarantee rests on).
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

if readelf -p .note.bolt_info "$binary" 2>/dev/null | grep -- "-reorder-blocks=ext-tsp" >/dev/null; then
  pass "build/gpuadmit carries BOLT's note with the layout's options"
else
  fail "build/gpuadmit has no .note.bolt_info naming -reorder-blocks=ext-tsp"
fi
if readelf -S "$binary" | grep '\.text\.cold' >/dev/null; then
  pass "the blocks no training review ran are in .text.cold"
else
  fail "no .text.cold section: nothing was split"
fi
if nm -C "$binary" | grep ' gpuadmit::Review(' >/dev/null; then
  pass "symbols kept"
else
  fail "no symbols in build/gpuadmit"
fi
if readelf -S "$binary" | grep '\.debug_info' >/dev/null; then
  fail "build/gpuadmit keeps debug information that describes the linker's layout"
else
  pass "debug information dropped (gpuadmit.linked has it)"
fi
if readelf -S "$linked" | grep '\.rela\.text' >/dev/null; then
  pass "the linked binary keeps its relocations (--emit-relocs)"
else
  fail "$linked has no .rela.text: BOLT cannot move whole functions"
fi
# The training ran the review: its functions have counts in the profile.
profile=$binary.bolt/profile.fdata
for fn in gpuadmit::Review gpuadmit::Plan gpuadmit::AppendPatch gpuadmit::AdmissionHandler::Handle; do
  if c++filt <"$profile" | grep " $fn(" >/dev/null; then
    pass "the profile counts $fn"
  else
    fail "the profile has no counts for $fn"
  fi
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
done
if cmp -s "$tmp/a/gpuadmit" "$tmp/b/gpuadmit"; then
  pass "two layouts of one linked binary are one file"
else
  fail "two layouts of one linked binary differ"
fi
if cmp -s "$tmp/a/gpuadmit" "$binary"; then
  pass "and the same file as build/gpuadmit"
else
  fail "a layout made here differs from build/gpuadmit"
fi
if [ "$failures" -eq 0 ]; then echo "every layout check passed"; else echo "$failures failed"; fi
exit $((failures > 0))
