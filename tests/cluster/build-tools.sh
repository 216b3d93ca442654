#!/usr/bin/env bash
# build-tools.sh: builds the real Kubernetes components the cluster tests run, from the versions
# pinned in the Go modules beside this script, into build/cluster/bin/.
#
#   k8s/   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (k8s.io/kubernetes,
#          its staging modules pinned to the matching v0.X.Y)
#   etcd/  etcd (go.etcd.io/etcd/server/v3)
#   kwok/  kwok (sigs.k8s.io/kwok/cmd/kwok)
#   helm/  helm (helm.sh/helm)
#
# Modules come from the Go module proxy and are checked against the committed go.sum; nothing
# prebuilt is downloaded. A module whose go.mod, go.sum, Go version and this script are unchanged
# since its last build is not built again (a stamp per module in build/cluster/bin/), and Go's
# own build cache makes a rebuild after a change incremental.
#
# Usage: tests/cluster/build-tools.sh [OUT_DIR]   (default: build/cluster/bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
out="${1:-${repo}/build/cluster/bin}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"  # absolute: each module is built from its own directory

# The Kubernetes release, in one place: the go.mod files pin the same one (a test checks).
readonly KUBE_VERSION=v1.37.2
readonly GO_MINIMUM=1.26

# The Go toolchain's own install place, when it is not on PATH.
command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || export PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "build-tools.sh: go is not on PATH (Go ${GO_MINIMUM} or newer is needed)" >&2; exit 1; }
go_version="$(go env GOVERSION)"
if ! printf '%s\n%s\n' "go${GO_MINIMUM}" "${go_version}" | sort -V -C; then
  echo "build-tools.sh: ${go_version} is older than go${GO_MINIMUM}" >&2
  exit 1
fi
# Use the installed Go, never a toolchain download.
# No VCS stamp: the binaries are the same whatever the repository's state.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"

kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
-X k8s.io/component-base/version.gitTreeState=clean \
-X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION}"

# build MODULE LDFLAGS NAME=PACKAGE...: each package built into OUT/NAME, unless the stamp holds.
build() {
  local module="$1" ldflags="$2"
  shift 2
  local stamp="${out}/.stamp-${module}" want have=""
  want="$(cat "${here}/${module}/go.mod" "${here}/${module}/go.sum" "${BASH_SOURCE[0]}" |
    sha256sum | cut -c1-16)-${go_version}"
  [[ -f "${stamp}" ]] && have="$(cat "${stamp}")"
  local missing=0 pair
  for pair in "$@"; do [[ -x "${out}/${pair%%=*}" ]] || missing=1; done
  if [[ "${have}" == "${want}" && ${missing} -eq 0 ]]; then
    echo "build-tools.sh: ${module} is up to date"
    return
  fi
  local started=${SECONDS}
  echo "build-tools.sh: building ${module}: ${*%%=*}"
  for pair in "$@"; do
    (cd "${here}/${module}" && go build -trimpath -ldflags "${ldflags}" \
      -o "${out}/${pair%%=*}" "${pair#*=}")
  done
  echo "${want}" >"${stamp}"
  echo "build-tools.sh: ${module} built in $((SECONDS - started)) s"
}

build k8s "${kube_ldflags}" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl
build etcd "-s -w" etcd=go.etcd.io/etcd/server/v3
build kwok "-s -w" kwok=sigs.k8s.io/kwok/cmd/kwok
if [[ -f "${here}/helm/go.mod" ]]; then
  build helm "-s -w" helm=helm.sh/helm/v3/cmd/helm
fi
