#!/usr/bin/env bash
# Builds image/Dockerfile with podman, offline from any registry, and smoke-tests the result:
#   tests/image/dockerfile_test.sh SOURCE_DIR
# The base image, debian:bookworm-slim, is made here: mmdebstrap --variant=minbase, then
# `podman import` under the name the Dockerfile asks for; the build's apt-get reaches Debian's
# mirror over the host network, as make image's mmdebstrap does. Then tests/image/smoke_test.py
# runs on the built image, saved as an OCI archive. Storage: a temporary folder, removed at exit.
# Exit 77 (skipped) where podman cannot run containers at all, as the smoke test decides.
set -euo pipefail
src=$(cd -- "${1:?usage: tests/image/dockerfile_test.sh SOURCE_DIR}" && pwd)
tmp=$(mktemp -d /tmp/gpuadmit-dockerfile-XXXXXX)
export CONTAINERS_ROOT=$tmp/containers
podman() { "$src/image/containers.sh" podman "$@"; }
trap 'podman rmi -a -f >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

version=$(sed -n 's/^project(gpuadmit .*VERSION \([0-9.]*\)).*/\1/p' "$src/CMakeLists.txt")
revision=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
epoch=$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)
mirror=${MIRROR:-http://deb.debian.org/debian}
security=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}

echo "# base: mmdebstrap --variant=minbase bookworm | podman import"
mmdebstrap --quiet --variant=minbase --mode=root bookworm "$tmp/base.tar" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main"
podman import -q "$tmp/base.tar" docker.io/library/debian:bookworm-slim >/dev/null
rm -f "$tmp/base.tar"

echo "# podman build -f image/Dockerfile"
start=$(date +%s)
if ! podman build --pull=never --network=host -q -f "$src/image/Dockerfile" \
    --build-arg VERSION="$version" --build-arg GPUADMIT_REVISION="$revision" \
    --build-arg SOURCE_DATE_EPOCH="$epoch" -t "localhost/gpuadmit:$version-dockerfile" \
    "$src" >"$tmp/build.log" 2>&1; then
  tail -40 "$tmp/build.log"
  echo "not ok - podman build -f image/Dockerfile"
  exit 1
fi
echo "ok - podman build -f image/Dockerfile ($(( $(date +%s) - start )) s)"
label=$(podman inspect -f '{{index .Labels "org.opencontainers.image.revision"}}' \
  "localhost/gpuadmit:$version-dockerfile")
if [ "$label" != "$revision" ]; then
  echo "not ok - the revision label is $label, not $revision"
  exit 1
fi
echo "ok - the revision label is $revision"
podman save -q --format oci-archive -o "$tmp/dockerfile.oci.tar" \
  "localhost/gpuadmit:$version-dockerfile"
podman rmi -a -f >/dev/null
python3 "$src/tests/image/smoke_test.py" --archive "$tmp/dockerfile.oci.tar" --source-dir "$src"
