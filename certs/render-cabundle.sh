#!/usr/bin/env bash
# render-cabundle.sh: put a CA certificate into the webhook's caBundle for the dev overlay.
#
# The kube-apiserver trusts the webhook's serving certificate only through
# MutatingWebhookConfiguration.webhooks[].clientConfig.caBundle (base64 PEM). This script writes
# that field for every webhook entry as a kustomize strategic-merge patch (webhooks merge by
# name), and stages the serving key pair where the overlay's secretGenerator reads it: kustomize
# refuses files outside the overlay's directory, so they cannot be read from certs/dev directly.
set -euo pipefail

readonly prog="${0##*/}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly repo_root

ca_file="${repo_root}/certs/dev/ca.crt"
overlay_dir="${repo_root}/manifests/overlays/dev"
webhook_file="${repo_root}/manifests/base/mutatingwebhookconfiguration.yaml"
config_name="gpuadmit"
tls_dir=""
stage_tls=1
to_stdout=0
webhooks=()

usage() {
  cat <<EOF
Usage: ${prog} [options]

Write the base64 caBundle of a CA certificate into a kustomize patch for the gpuadmit
MutatingWebhookConfiguration, and copy the serving key pair into the overlay.

Options:
  --ca FILE           CA certificate, PEM (default: certs/dev/ca.crt)
  --overlay DIR       Overlay to write into (default: manifests/overlays/dev); writes
                      DIR/cabundle-patch.yaml and DIR/tls/tls.crt, DIR/tls/tls.key, DIR/tls/ca.crt
  --tls-dir DIR       Where tls.crt and tls.key are (default: the directory of --ca)
  --no-tls            Write only the caBundle patch; do not copy the key pair
  --webhook NAME      A webhook entry to patch; repeatable (default: every entry named in
                      manifests/base/mutatingwebhookconfiguration.yaml)
  --config-name NAME  metadata.name of the MutatingWebhookConfiguration (default: ${config_name})
  --stdout            Only print the base64 caBundle on stdout; write nothing
  -h, --help          Show this help

Typical use:
  certs/gen-certs.sh && certs/render-cabundle.sh && kubectl apply -k manifests/overlays/dev
EOF
}

die() {
  echo "${prog}: $*" >&2
  exit 1
}

need_value() {
  [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --ca) need_value "$@"; ca_file="$2"; shift 2 ;;
    --overlay) need_value "$@"; overlay_dir="$2"; shift 2 ;;
    --tls-dir) need_value "$@"; tls_dir="$2"; shift 2 ;;
    --no-tls) stage_tls=0; shift ;;
    --webhook) need_value "$@"; webhooks+=("$2"); shift 2 ;;
    --config-name) need_value "$@"; config_name="$2"; shift 2 ;;
    --stdout) to_stdout=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

command -v openssl >/dev/null 2>&1 || die "openssl not found (Debian package: openssl)"
[[ -r "${ca_file}" ]] || die "cannot read CA file ${ca_file} (run certs/gen-certs.sh first)"
# Refuse anything the apiserver would reject later, with a clearer message than it gives.
openssl x509 -in "${ca_file}" -noout >/dev/null 2>&1 ||
  die "${ca_file} is not a PEM certificate"
openssl x509 -in "${ca_file}" -noout -ext basicConstraints 2>/dev/null | grep -q 'CA:TRUE' ||
  die "${ca_file} is not a CA certificate (no basicConstraints CA:TRUE)"

# Re-encode through openssl so stray text around the PEM block never reaches the bundle.
ca_bundle="$(openssl x509 -in "${ca_file}" -outform PEM | openssl base64 -A)"

if ((to_stdout)); then
  printf '%s\n' "${ca_bundle}"
  exit 0
fi

if ((${#webhooks[@]} == 0)); then
  [[ -r "${webhook_file}" ]] ||
    die "cannot read ${webhook_file} to list webhook names; pass --webhook NAME"
  # The entries of the top-level 'webhooks:' list, written as '  - name: X' in that file.
  mapfile -t webhooks < <(awk '
    /^[^[:space:]#]/ { in_webhooks = ($0 ~ /^webhooks:/) ; next }
    in_webhooks && /^  - name:/ {
      sub(/^  - name:[[:space:]]*/, ""); sub(/[[:space:]]+#.*$/, ""); gsub(/["'\'']/, "")
      print
    }' "${webhook_file}")
  ((${#webhooks[@]} > 0)) || die "found no webhook entries in ${webhook_file}; pass --webhook NAME"
fi

[[ -d "${overlay_dir}" ]] || die "overlay directory ${overlay_dir} does not exist"
patch_file="${overlay_dir}/cabundle-patch.yaml"
tmp_patch="$(mktemp "${overlay_dir}/.cabundle-patch.XXXXXX")"
trap 'rm -f "${tmp_patch}"' EXIT
{
  echo "# caBundle patch for the gpuadmit webhooks, written by certs/render-cabundle.sh."
  echo "# Generated from ${ca_file#"${repo_root}/"}; do not edit or commit (see .gitignore)."
  echo "apiVersion: admissionregistration.k8s.io/v1"
  echo "kind: MutatingWebhookConfiguration"
  echo "metadata:"
  echo "  name: ${config_name}"
  echo "webhooks:"
  for name in "${webhooks[@]}"; do
    echo "  - name: ${name}"
    echo "    clientConfig:"
    echo "      caBundle: ${ca_bundle}"
  done
} >"${tmp_patch}"
chmod 0644 "${tmp_patch}"
mv -f "${tmp_patch}" "${patch_file}"
echo "${prog}: wrote ${patch_file} (caBundle of ${ca_file} for: ${webhooks[*]})"

if ((stage_tls)); then
  [[ -n "${tls_dir}" ]] || tls_dir="$(dirname "${ca_file}")"
  for f in tls.crt tls.key; do
    [[ -r "${tls_dir}/${f}" ]] || die "cannot read ${tls_dir}/${f}; pass --tls-dir or --no-tls"
  done
  # The serving certificate must chain to the CA just written, or every admission call fails.
  openssl verify -CAfile "${ca_file}" "${tls_dir}/tls.crt" >/dev/null 2>&1 ||
    die "${tls_dir}/tls.crt does not verify against ${ca_file}"
  mkdir -p "${overlay_dir}/tls"
  chmod 0700 "${overlay_dir}/tls"
  install -m 0644 "${tls_dir}/tls.crt" "${overlay_dir}/tls/tls.crt"
  install -m 0600 "${tls_dir}/tls.key" "${overlay_dir}/tls/tls.key"
  # ca.crt too, as cert-manager's Secret has it: serve --leader-elect verifies the leader with it.
  install -m 0644 "${ca_file}" "${overlay_dir}/tls/ca.crt"
  echo "${prog}: copied ${tls_dir}/tls.crt, tls.key and ${ca_file} to ${overlay_dir}/tls/ (key mode 0600)"
fi
