#!/usr/bin/env bash
# Runs podman or buildah with the repository's configuration and storage under build/containers/:
#   image/containers.sh podman images
#   image/containers.sh buildah from scratch
# CONTAINERS_ROOT overrides the storage folder (tests use a temporary one).
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd -- "$HERE/.." && pwd)
tool=${1:?usage: image/containers.sh podman|buildah ARGS...}
shift
case "$tool" in
  podman|buildah) ;;
  *) echo "image/containers.sh: podman or buildah, not $tool" >&2; exit 2 ;;
esac
root=${CONTAINERS_ROOT:-$REPO/build/containers}
mkdir -p "$root/storage" "$root/run"
export CONTAINERS_CONF=$HERE/containers.conf
export CONTAINERS_STORAGE_CONF=$HERE/storage.conf
export BUILDAH_ISOLATION=chroot  # buildah run without a runtime's namespaces
exec "$tool" --root "$root/storage" --runroot "$root/run" "$@"
