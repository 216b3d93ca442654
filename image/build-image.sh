#!/usr/bin/env bash
# `make image`: the gpuadmit OCI image, built on this machine with Debian's tools only.
#   image/build-image.sh [--binary build-release/gpuadmit] [--out build/gpuadmit-VERSION.oci.tar]
#
# 1. image/check-packages.sh: every shared library the binary needs is in image/packages.txt;
# 2. mmdebstrap --variant=extract unpacks those packages (bookworm, bookworm-updates and
#    bookworm-security; MIRROR and SECURITY_MIRROR override the addresses);
# 3. image/assemble-rootfs.sh keeps only what gpuadmit needs, with the binary stripped (the
#    unstripped one stays in build/ for debugging), and the binary is run once in it (chroot);
# 4. buildah assembles it from scratch: entrypoint /usr/bin/gpuadmit, user 65532, OCI labels;
#    committed with every timestamp at SOURCE_DATE_EPOCH (the commit's time unless set), so two
#    builds of one commit from the same packages give one digest.
# Prints the archive's path, size and manifest digest. Needs root (mmdebstrap, chroot, buildah
# without user namespaces).
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd -- "$HERE/.." && pwd)
binary=$REPO/build-release/gpuadmit
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image/build-image.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" != 0 ]; then
  echo "image/build-image.sh: needs root (mmdebstrap, chroot and buildah here run as root)" >&2
  exit 2
fi
for tool in mmdebstrap buildah objcopy; do
  command -v "$tool" >/dev/null || { echo "image/build-image.sh: $tool is missing" >&2; exit 2; }
done
[ -x "$binary" ] || { echo "image/build-image.sh: no binary at $binary (make build)" >&2; exit 2; }

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$REPO" log -1 --format=%ct)
fi
export SOURCE_DATE_EPOCH
version=$("$binary" version | sed -n '1s/^gpuadmit //p')
revision=$("$binary" version | sed -n 's/^revision: //p')
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
out=${out:-$REPO/build/gpuadmit-$version.oci.tar}
work=$REPO/build/image
mkdir -p "$work"

"$HERE/check-packages.sh" "$binary" >/dev/null

mirror=${MIRROR:-http://deb.debian.org/debian}
security=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
packages=$(grep -v '^#' "$HERE/packages.txt" | sed '/^$/d' | paste -sd, -)
rm -rf "$work/tree"
mmdebstrap --quiet --variant=extract --mode=root --include="$packages" bookworm "$work/tree" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main"

objcopy --strip-all "$binary" "$work/gpuadmit"
"$HERE/assemble-rootfs.sh" "$work/tree" "$work/gpuadmit" "$work/rootfs"
chroot "$work/rootfs" /usr/bin/gpuadmit version >/dev/null ||
  { echo "image/build-image.sh: gpuadmit does not run in the assembled root" >&2; exit 1; }

containers() { "$HERE/containers.sh" buildah "$@"; }
ctr=$(containers from --quiet scratch)
trap 'containers rm "$ctr" >/dev/null 2>&1 || true' EXIT
containers copy --quiet "$ctr" "$work/rootfs/" / >/dev/null
containers config \
  --entrypoint '["/usr/bin/gpuadmit"]' --cmd '' \
  --user 65532:65532 --workingdir / \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --port 8443/tcp --port 9090/tcp \
  --label org.opencontainers.image.title=gpuadmit \
  --label "org.opencontainers.image.description=Kubernetes mutating admission webhook that places GPU workloads" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.source=https://github.com/gpuadmit/gpuadmit" \
  --label "org.opencontainers.image.created=$created" \
  --label io.buildah.version- \
  "$ctr"
rm -f "$out"
containers commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" --identity-label=false \
  --disable-compression=false "$ctr" "oci-archive:$work/archive.tar:gpuadmit:$version" >/dev/null
# The archive again with its own entries' times, owners and order fixed: byte for byte the same
# file from the same inputs, not only the same digest inside.
rm -rf "$work/archive"
mkdir "$work/archive"
tar -xf "$work/archive.tar" -C "$work/archive"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -cf "$out" -C "$work/archive" blobs index.json oci-layout
rm -rf "$work/archive" "$work/archive.tar"
digest=$(tar -xOf "$out" index.json | python3 -c \
  'import json,sys; print(json.load(sys.stdin)["manifests"][0]["digest"])')
size=$(stat -c %s "$out")
echo "image: $out"
echo "size: $size bytes ($(( (size + 524287) / 1048576 )) MiB)"
echo "digest: $digest"
echo "sha256: $(sha256sum "$out" | cut -d' ' -f1)"
echo "tag: gpuadmit:$version"
