#!/usr/bin/env bash
# Checks that image/packages.txt names the Debian package of every shared library BINARY needs:
#   image/check-packages.sh build/gpuadmit
# Prints "library -> package" per library (ldd's list, then one dpkg -S for all of them); exits 1
# naming each library whose package is missing from the list, or that no package owns.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
binary=${1:?usage: image/check-packages.sh BINARY}
listed=$(grep -v '^#' "$HERE/packages.txt" | sed '/^$/d')
# "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)" and the loader's own line; dpkg
# knows the files by the paths its packages ship, so each symlink is resolved first.
mapfile -t libs < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
[ ${#libs[@]} -gt 0 ] || { echo "check-packages: ldd lists no library for $binary" >&2; exit 1; }
declare -A real
for lib in "${libs[@]}"; do real[$lib]=$(readlink -f "$lib"); done
# "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3"; merged /usr: a path may be known
# under /lib or /usr/lib, so both spellings are asked for.
owners=$(dpkg -S "${real[@]}" "${real[@]/#\/usr\/lib\//\/lib\/}" 2>/dev/null || true)
missing=0
for lib in "${libs[@]}"; do
  path=${real[$lib]}
  pkg=$(awk -v p="$path" -v q="${path/#\/usr\/lib\//\/lib\/}" \
    '{f=$NF} f == p || f == q {split($1, a, ":"); print a[1]; exit}' <<<"$owners")
  if [ -z "$pkg" ]; then
    echo "$lib -> no Debian package owns $path" >&2
    missing=1
  elif grep -qx "$pkg" <<<"$listed"; then
    echo "$lib -> $pkg"
  else
    echo "$lib -> $pkg: MISSING from image/packages.txt" >&2
    missing=1
  fi
done
exit $missing
