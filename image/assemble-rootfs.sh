#!/usr/bin/env bash
# Assembles the runtime root filesystem of the gpuadmit image from extracted Debian packages:
#   image/assemble-rootfs.sh TREE BINARY OUT
# TREE: the packages of image/packages.txt unpacked (mmdebstrap --variant=extract, or dpkg-deb -x
# in the Dockerfile). BINARY: the stripped gpuadmit. OUT: a new folder holding only
#   /usr/bin/gpuadmit
#   the shared libraries BINARY needs (its `ldd` here), and the dynamic loader, from TREE
#   /etc/ssl/certs/ca-certificates.crt (Mozilla's roots from TREE's ca-certificates)
#   /etc/passwd, /etc/group (root and nonroot 65532), /etc/nsswitch.conf, /tmp, /home/nonroot
#   /usr/share/doc/PACKAGE/copyright for each package
# in the merged-/usr layout (/lib and /lib64 link into /usr), with every mtime set to
# SOURCE_DATE_EPOCH. No shell, no package manager: nothing runs in the image but gpuadmit.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
tree=${1:?usage: image/assemble-rootfs.sh TREE BINARY OUT}
binary=${2:?usage: image/assemble-rootfs.sh TREE BINARY OUT}
out=${3:?usage: image/assemble-rootfs.sh TREE BINARY OUT}
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set (image/build-image.sh sets it)}"
multiarch=x86_64-linux-gnu

rm -rf "$out"
mkdir -p "$out/usr/bin" "$out/usr/lib/$multiarch" "$out/usr/lib64" "$out/etc/ssl/certs" \
  "$out/usr/lib/ssl" "$out/tmp" "$out/home/nonroot"
ln -s usr/lib "$out/lib"
ln -s usr/lib64 "$out/lib64"
install -m 0755 "$binary" "$out/usr/bin/gpuadmit"

# A library as this machine's ldd names it (/lib/x86_64-linux-gnu/libssl.so.3, merged /usr
# here) is in TREE under /lib or /usr/lib, whichever its package uses.
from_tree() {
  local path=$1 candidate
  for candidate in "$tree$path" "$tree/usr$path" "$tree${path#/usr}"; do
    if [ -e "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  echo "assemble-rootfs: $path is in none of the packages of $tree" >&2
  return 1
}
while read -r lib; do
  name=$(basename "$lib")
  src=$(from_tree "/lib/$multiarch/$name") || exit 1
  # The file under its soname (cp -L: the package's symlink resolved).
  cp -L "$src" "$out/usr/lib/$multiarch/$name"
  chmod 0644 "$out/usr/lib/$multiarch/$name"
done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
loader=ld-linux-x86-64.so.2
cp -L "$(from_tree "/lib/$multiarch/$loader")" "$out/usr/lib/$multiarch/$loader"
chmod 0755 "$out/usr/lib/$multiarch/$loader"
ln -s "../lib/$multiarch/$loader" "$out/usr/lib64/$loader"

# What update-ca-certificates would write, without running it: Mozilla's roots, in name order.
find "$tree/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort |
  xargs cat >"$out/etc/ssl/certs/ca-certificates.crt"
[ -s "$out/etc/ssl/certs/ca-certificates.crt" ] ||
  { echo "assemble-rootfs: no CA certificates in $tree" >&2; exit 1; }
chmod 0644 "$out/etc/ssl/certs/ca-certificates.crt"
# OpenSSL's default paths, as Debian links them.
ln -s /etc/ssl/certs "$out/usr/lib/ssl/certs"
ln -s /etc/ssl/certs/ca-certificates.crt "$out/usr/lib/ssl/cert.pem"

printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  >"$out/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$out/etc/nsswitch.conf"
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/nsswitch.conf"
chmod 1777 "$out/tmp"
chown 65532:65532 "$out/home/nonroot"
chmod 0755 "$out/home/nonroot"

while read -r pkg; do
  mkdir -p "$out/usr/share/doc/$pkg"
  install -m 0644 "$tree/usr/share/doc/$pkg/copyright" "$out/usr/share/doc/$pkg/copyright"
done < <(grep -v '^#' "$HERE/packages.txt" | sed '/^$/d')

find "$out" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
