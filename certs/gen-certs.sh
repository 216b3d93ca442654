#!/usr/bin/env bash
# gen-certs.sh: make a development CA and the webhook's serving certificate with openssl.
#
# The kube-apiserver calls the webhook at https://<service>.<namespace>.svc:443, so the serving
# certificate must name that host in its subjectAltName, chain to the CA placed in the
# MutatingWebhookConfiguration's caBundle (certs/render-cabundle.sh), and carry
# extendedKeyUsage serverAuth; it also carries clientAuth, since replicas present it to each other
# when one forwards a review to its leader. Clusters that run cert-manager should use
# manifests/overlays/cert-manager instead.
set -euo pipefail

readonly prog="${0##*/}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly repo_root

# Regenerate when the certificate expires within this many days: long enough to notice in a dev
# loop, short enough that a freshly made 365-day certificate is kept.
readonly kRenewBeforeDays=30

service="gpuadmit"
namespace="gpuadmit"
out_dir="${repo_root}/certs/dev"
key_type="ecdsa"
days=365
force=0

usage() {
  cat <<EOF
Usage: ${prog} [options]

Make a CA and a serving certificate for the gpuadmit webhook.

Options:
  --service NAME     Service name (default: ${service})
  --namespace NS     Service namespace (default: ${namespace})
  --out DIR          Output directory (default: certs/dev)
  --key-type TYPE    ecdsa (P-256, the default) or rsa (2048 bits)
  --days N           Validity of both certificates in days (default: ${days})
  --force            Regenerate even if the existing files are still good
  -h, --help         Show this help

Writes DIR/ca.crt, DIR/ca.key, DIR/tls.crt and DIR/tls.key (keys mode 0600). Both
certificates are signed with SHA-256. The serving certificate names:
  DNS <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local, <svc>.<ns>, <svc>, localhost
  IP  127.0.0.1, ::1

Idempotent: if the four files exist, the certificate chains to the CA, matches its key, has
the requested key type and names, and stays valid for more than ${kRenewBeforeDays} days,
nothing is written unless --force is given.

Next step: certs/render-cabundle.sh puts ca.crt into the webhook's caBundle.
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
    --service) need_value "$@"; service="$2"; shift 2 ;;
    --namespace) need_value "$@"; namespace="$2"; shift 2 ;;
    --out) need_value "$@"; out_dir="$2"; shift 2 ;;
    --key-type) need_value "$@"; key_type="$2"; shift 2 ;;
    --days) need_value "$@"; days="$2"; shift 2 ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# DNS-1123 labels: what a Service and a Namespace may be called.
readonly kDns1123Label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'
[[ "${service}" =~ ${kDns1123Label} ]] || die "--service '${service}' is not a DNS-1123 label"
[[ "${namespace}" =~ ${kDns1123Label} ]] || die "--namespace '${namespace}' is not a DNS-1123 label"
[[ "${key_type}" == ecdsa || "${key_type}" == rsa ]] ||
  die "--key-type must be ecdsa or rsa, not '${key_type}'"
[[ "${days}" =~ ^[1-9][0-9]*$ ]] || die "--days must be a positive integer, not '${days}'"
command -v openssl >/dev/null 2>&1 || die "openssl not found (Debian package: openssl)"

if ((days <= kRenewBeforeDays)); then
  echo "${prog}: warning: --days ${days} is within the ${kRenewBeforeDays}-day renewal window;" \
    "every run will regenerate" >&2
fi

readonly ca_crt="${out_dir}/ca.crt" ca_key="${out_dir}/ca.key"
readonly tls_crt="${out_dir}/tls.crt" tls_key="${out_dir}/tls.key"

dns_names=(
  "${service}.${namespace}.svc"
  "${service}.${namespace}.svc.cluster.local"
  "${service}.${namespace}"
  "${service}"
  "localhost"
)
# openssl prints IPv6 SANs uncompressed, so ::1 is compared in that form.
ip_names=("127.0.0.1" "::1")
readonly expected_sans=(
  "${dns_names[@]/#/DNS:}"
  "IP Address:127.0.0.1"
  "IP Address:0:0:0:0:0:0:0:1"
)

# Prints the key-type word (ecdsa|rsa) and size of a certificate's public key, e.g. "ecdsa 256".
cert_key_desc() {
  local text
  text="$(openssl x509 -in "$1" -noout -text 2>/dev/null)" || return 1
  local bits
  bits="$(sed -n 's/.*Public-Key: (\([0-9]*\) bit).*/\1/p' <<<"${text}" | head -n1)"
  if grep -q 'Public Key Algorithm: id-ecPublicKey' <<<"${text}" &&
    grep -q 'NIST CURVE: P-256' <<<"${text}"; then
    echo "ecdsa ${bits}"
  elif grep -q 'Public Key Algorithm: rsaEncryption' <<<"${text}"; then
    echo "rsa ${bits}"
  else
    echo "other ${bits}"
  fi
}

wanted_key_desc() {
  if [[ "${key_type}" == ecdsa ]]; then echo "ecdsa 256"; else echo "rsa 2048"; fi
}

# Succeeds when the existing files can be kept; otherwise prints why not on stdout and fails.
existing_is_good() {
  local f
  for f in "${ca_crt}" "${ca_key}" "${tls_crt}" "${tls_key}"; do
    [[ -s "${f}" ]] || { echo "${f} is missing"; return 1; }
  done
  local renew_seconds=$((kRenewBeforeDays * 86400))
  for f in "${ca_crt}" "${tls_crt}"; do
    openssl x509 -in "${f}" -noout -checkend "${renew_seconds}" >/dev/null 2>&1 ||
      { echo "${f} expires within ${kRenewBeforeDays} days or is unreadable"; return 1; }
  done
  openssl verify -CAfile "${ca_crt}" "${tls_crt}" >/dev/null 2>&1 ||
    { echo "${tls_crt} does not chain to ${ca_crt}"; return 1; }
  local pub_cert pub_key
  pub_cert="$(openssl x509 -in "${tls_crt}" -noout -pubkey 2>/dev/null)"
  pub_key="$(openssl pkey -in "${tls_key}" -pubout 2>/dev/null)" ||
    { echo "${tls_key} is unreadable"; return 1; }
  [[ "${pub_cert}" == "${pub_key}" ]] || { echo "${tls_key} does not match ${tls_crt}"; return 1; }
  pub_cert="$(openssl x509 -in "${ca_crt}" -noout -pubkey 2>/dev/null)"
  pub_key="$(openssl pkey -in "${ca_key}" -pubout 2>/dev/null)" ||
    { echo "${ca_key} is unreadable"; return 1; }
  [[ "${pub_cert}" == "${pub_key}" ]] || { echo "${ca_key} does not match ${ca_crt}"; return 1; }
  local have want
  want="$(wanted_key_desc)"
  for f in "${ca_crt}" "${tls_crt}"; do
    have="$(cert_key_desc "${f}")"
    [[ "${have}" == "${want}" ]] ||
      { echo "${f} has key type '${have}', '${want}' requested"; return 1; }
  done
  local sans san
  sans="$(openssl x509 -in "${tls_crt}" -noout -ext subjectAltName 2>/dev/null | tail -n +2 |
    tr ',' '\n' | sed 's/^ *//')"
  for san in "${expected_sans[@]}"; do
    grep -qxF "${san}" <<<"${sans}" || { echo "${tls_crt} lacks SAN ${san}"; return 1; }
  done
  return 0
}

if ((force == 0)); then
  if reason="$(existing_is_good)"; then
    echo "${prog}: ${out_dir} is up to date ($(cert_key_desc "${tls_crt}") key," \
      "$(openssl x509 -in "${tls_crt}" -noout -enddate)); use --force to regenerate"
    exit 0
  fi
  if [[ -e "${ca_crt}" || -e "${tls_crt}" ]]; then
    echo "${prog}: regenerating: ${reason}"
  fi
fi

mkdir -p "${out_dir}"
# Build everything in a scratch directory beside the output, then move it into place, so an
# interrupted run never leaves a CA and a serving certificate that do not belong together.
work="$(mktemp -d "${out_dir}/.gen-certs.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
umask 077

gen_key() {
  if [[ "${key_type}" == ecdsa ]]; then
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
      -pkeyopt ec_param_enc:named_curve -out "$1" 2>/dev/null
  else
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null
  fi
}

# keyEncipherment only means something for RSA key transport; an ECDSA key only signs.
if [[ "${key_type}" == rsa ]]; then
  server_key_usage="critical, digitalSignature, keyEncipherment"
else
  server_key_usage="critical, digitalSignature"
fi

# A private config keeps the result independent of the system openssl.cnf and OPENSSL_CONF.
{
  echo "[req]"
  echo "distinguished_name = dn"
  echo "prompt = no"
  echo "[dn]"
  echo "[ca_ext]"
  echo "basicConstraints = critical, CA:TRUE, pathlen:0"
  echo "keyUsage = critical, keyCertSign, cRLSign"
  echo "subjectKeyIdentifier = hash"
  echo "[server_ext]"
  echo "basicConstraints = critical, CA:FALSE"
  echo "keyUsage = ${server_key_usage}"
  echo "extendedKeyUsage = serverAuth, clientAuth"
  echo "subjectKeyIdentifier = hash"
  echo "authorityKeyIdentifier = keyid, issuer"
  echo "subjectAltName = @alt_names"
  echo "[alt_names]"
  for i in "${!dns_names[@]}"; do echo "DNS.$((i + 1)) = ${dns_names[i]}"; done
  for i in "${!ip_names[@]}"; do echo "IP.$((i + 1)) = ${ip_names[i]}"; done
} >"${work}/openssl.cnf"

# 16 random octets (RFC 5280 allows up to 20); forcing the first hex digit to 7 keeps the
# serial positive and its length fixed.
serial() {
  printf '0x%s' "$(openssl rand -hex 16 | sed 's/^./7/')"
}

gen_key "${work}/ca.key"
openssl req -x509 -new -config "${work}/openssl.cnf" -extensions ca_ext -sha256 \
  -key "${work}/ca.key" -subj "/O=gpuadmit/CN=gpuadmit development CA" -days "${days}" \
  -set_serial "$(serial)" -out "${work}/ca.crt"

gen_key "${work}/tls.key"
openssl req -new -config "${work}/openssl.cnf" -sha256 -key "${work}/tls.key" \
  -subj "/O=gpuadmit/CN=${service}.${namespace}.svc" -out "${work}/tls.csr"
openssl x509 -req -in "${work}/tls.csr" -sha256 -days "${days}" \
  -CA "${work}/ca.crt" -CAkey "${work}/ca.key" -set_serial "$(serial)" \
  -extfile "${work}/openssl.cnf" -extensions server_ext -out "${work}/tls.crt" 2>/dev/null

openssl verify -CAfile "${work}/ca.crt" "${work}/tls.crt" >/dev/null ||
  die "internal error: the new certificate does not verify against the new CA"

chmod 0600 "${work}/ca.key" "${work}/tls.key"
chmod 0644 "${work}/ca.crt" "${work}/tls.crt"
for f in ca.key ca.crt tls.key tls.crt; do
  mv -f "${work}/${f}" "${out_dir}/${f}"
done

desc="$(wanted_key_desc)"
echo "${prog}: wrote ${ca_crt} (CA, ${desc} key, SHA-256, ${days} days)"
echo "${prog}: wrote ${ca_key} (mode 0600)"
echo "${prog}: wrote ${tls_crt} (serverAuth and clientAuth, ${desc} key, SHA-256, ${days} days)"
echo "${prog}:   SANs: ${dns_names[*]} ${ip_names[*]}"
echo "${prog}: wrote ${tls_key} (mode 0600)"
