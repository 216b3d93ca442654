#!/usr/bin/env bash
# kustomize_test.sh: renders gpuadmit's manifests and certificates and checks what comes out.
#
# Usage: tests/manifests/kustomize_test.sh [REPO_ROOT]   (default: two directories up)
#
# Checks, one line each: the kustomize base (manifests/), the cert-manager overlay, the dev
# overlay after certs/gen-certs.sh + certs/render-cabundle.sh, the monitoring component in the
# example overlay of docs/monitoring.md and in overlays made here, the certificates themselves,
# and manifests/examples/demo-cluster.json. Hermetic: works on copies in a temporary directory,
# writes nothing into the repository, needs no network or cluster.
# Needs: kubectl (with built-in kustomize), openssl, /usr/bin/python3 with PyYAML (Debian
# python3-yaml). Exit status: 0 all passed, 1 a check failed, 77 kubectl is absent (skipped).
set -uo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${1:-${script_dir}/../..}" && pwd)" || { echo "no such repo root: ${1:-}" >&2; exit 1; }

# The pinned kubectl of make cluster-tools when it is built, else the one on PATH.
kubectl="${KUBECTL:-kubectl}"
if [ -z "${KUBECTL:-}" ] && [ -x "${repo}/build/cluster/bin/kubectl" ]; then
  kubectl="${repo}/build/cluster/bin/kubectl"
fi
if ! command -v "${kubectl}" >/dev/null 2>&1; then
  echo "SKIP: kubectl not found; the manifests test needs kubectl (built-in kustomize)"
  exit 77
fi
py=/usr/bin/python3
[[ -x "${py}" ]] || py="$(command -v python3 || true)"
if [[ -z "${py}" ]] || ! "${py}" -c 'import yaml' 2>/dev/null; then
  echo "FAIL  python3 with PyYAML is required (Debian package: python3-yaml)"
  echo "0 passed, 1 failed"
  exit 1
fi

# The release version, CMakeLists.txt's project(... VERSION x.y.z): the image tag the base pins.
export GPUADMIT_VERSION="$(sed -n 's/^project(gpuadmit .*VERSION \([0-9.]*\)).*/\1/p' "${repo}/CMakeLists.txt")"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpuadmit-manifests-test.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

passed=0
failed=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1"; failed=$((failed + 1)); }
# check DESCRIPTION COMMAND...: runs COMMAND quietly; on failure shows its output.
check() {
  local desc="$1" out
  shift
  if out="$("$@" 2>&1)"; then
    pass "${desc}"
  else
    fail "${desc}"
    [[ -n "${out}" ]] && head -n 20 <<<"${out}" | while IFS= read -r l; do echo "      ${l}"; done
  fi
}
# Python checks print "PASS  ..." / "FAIL  ..." lines; fold them into the counters.
run_py_checks() {
  local out rc line
  out="$("${py}" - "$@" <<<"${PY_CHECKS}" 2>&1)"
  rc=$?
  while IFS= read -r line; do
    case "${line}" in
      PASS*) pass "${line#PASS  }" ;;
      FAIL*) fail "${line#FAIL  }" ;;
      *) echo "      ${line}" ;;
    esac
  done <<<"${out}"
  ((rc == 0)) || fail "python checks '$1' ran to completion (exit ${rc})"
}

# A private copy of what the scripts read and write, without any developer keys or generated
# overlay inputs that may sit in the working tree.
work="${tmp}/repo"
mkdir -p "${work}"
cp -R "${repo}/manifests" "${repo}/certs" "${work}/"
rm -rf "${work}/certs/dev" "${work}/manifests/overlays/dev/tls" \
  "${work}/manifests/overlays/dev/cabundle-patch.yaml"

render() { # render DIR OUT
  "${kubectl}" kustomize "$1" >"$2" 2>"$2.err" || { cat "$2.err"; return 1; }
}

# --- kustomize renders -------------------------------------------------------------------------
check "kubectl kustomize manifests/ renders" render "${work}/manifests" "${tmp}/base.yaml"
check "kubectl kustomize manifests/overlays/cert-manager renders" \
  render "${work}/manifests/overlays/cert-manager" "${tmp}/cert-manager.yaml"

# --- helpers for the certificate checks --------------------------------------------------------
x509_text() { openssl x509 -in "$1" -noout -text; }
has_text() { # has_text CERT REGEX: the certificate's text form matches REGEX
  x509_text "$1" | grep -Eq -- "$2" || { echo "no match for '$2' in $1"; return 1; }
}
check_sans() { # check_sans CERT SVC NS: all seven names gen-certs.sh promises
  local sans want
  sans="$(openssl x509 -in "$1" -noout -ext subjectAltName | tail -n +2 | tr ',' '\n' |
    sed 's/^ *//')"
  for want in "DNS:$2.$3.svc" "DNS:$2.$3.svc.cluster.local" "DNS:$2" "DNS:$2.$3" \
    "DNS:localhost" "IP Address:127.0.0.1" "IP Address:0:0:0:0:0:0:0:1"; do
    grep -qxF "${want}" <<<"${sans}" || { echo "missing SAN ${want}; have: ${sans}"; return 1; }
  done
}
is_rsa_2048() {
  x509_text "$1" | grep -q 'Public Key Algorithm: rsaEncryption' &&
    x509_text "$1" | grep -q 'Public-Key: (2048 bit)'
}
mode_is() { # mode_is MODE FILE...
  local want="$1" f
  shift
  for f in "$@"; do
    [[ "$(stat -c %a "${f}")" == "${want}" ]] ||
      { echo "${f} is mode $(stat -c %a "${f}")"; return 1; }
  done
}
key_matches_cert() { # key_matches_cert KEY CERT
  [[ "$(openssl pkey -in "$1" -pubout)" == "$(openssl x509 -in "$2" -noout -pubkey)" ]]
}
valid_days_between() { # valid_days_between CERT MIN MAX: expires after MIN days, before MAX
  openssl x509 -in "$1" -noout -checkend $(($2 * 86400)) >/dev/null &&
    ! openssl x509 -in "$1" -noout -checkend $(($3 * 86400)) >/dev/null
}
fails() { ! "$@" >/dev/null 2>&1; }
prints() { # prints REGEX COMMAND...: COMMAND succeeds and its stdout matches REGEX
  local re="$1" out
  shift
  out="$("$@")" || return 1
  grep -Eq -- "${re}" <<<"${out}" || { echo "output lacks /${re}/: ${out}"; return 1; }
}
sums() { sha256sum "$1"/{ca.crt,ca.key,tls.crt,tls.key}; }
changes_tls_crt() { # changes_tls_crt DIR COMMAND...: COMMAND succeeds and rewrites DIR/tls.crt
  local dir="$1" before
  shift
  before="$(sha256sum "${dir}/tls.crt")"
  "$@" >/dev/null || return 1
  [[ "$(sha256sum "${dir}/tls.crt")" != "${before}" ]] || { echo "tls.crt unchanged"; return 1; }
}
bundle_is_ca() { # bundle_is_ca SCRIPT CA: --stdout prints the CA file, base64-encoded
  [[ "$("$1" --stdout --ca "$2" | openssl base64 -d -A)" == "$(cat "$2")" ]]
}

# --- certificates: ECDSA (default) --------------------------------------------------------------
gen="${work}/certs/gen-certs.sh"
dev_certs="${work}/certs/dev"
check "gen-certs.sh --help prints usage" prints '^Usage:' "${gen}" --help
check "gen-certs.sh rejects --key-type dsa" fails "${gen}" --key-type dsa --out "${tmp}/bad"
check "gen-certs.sh rejects an unknown option" fails "${gen}" --bogus
check "gen-certs.sh makes ECDSA certs" "${gen}" --out "${dev_certs}"
check "gen-certs.sh wrote ca.crt ca.key tls.crt tls.key" \
  test -s "${dev_certs}/ca.crt" -a -s "${dev_certs}/ca.key" -a -s "${dev_certs}/tls.crt" \
  -a -s "${dev_certs}/tls.key"
check "private keys are mode 0600" mode_is 600 "${dev_certs}/ca.key" "${dev_certs}/tls.key"
check "tls.crt SANs: gpuadmit.gpuadmit.svc(.cluster.local), gpuadmit, localhost, 127.0.0.1, ::1" \
  check_sans "${dev_certs}/tls.crt" gpuadmit gpuadmit
check "tls.crt key is ECDSA P-256" has_text "${dev_certs}/tls.crt" 'NIST CURVE: P-256'
check "ca.crt key is ECDSA P-256" has_text "${dev_certs}/ca.crt" 'NIST CURVE: P-256'
check "tls.crt signed with ecdsa-with-SHA256" \
  has_text "${dev_certs}/tls.crt" 'Signature Algorithm: ecdsa-with-SHA256'
check "ca.crt signed with ecdsa-with-SHA256" \
  has_text "${dev_certs}/ca.crt" 'Signature Algorithm: ecdsa-with-SHA256'
check "ca.crt has basicConstraints CA:TRUE" has_text "${dev_certs}/ca.crt" 'CA:TRUE'
check "tls.crt is not a CA" has_text "${dev_certs}/tls.crt" 'CA:FALSE'
check "tls.crt has extendedKeyUsage serverAuth" \
  has_text "${dev_certs}/tls.crt" 'TLS Web Server Authentication'
check "openssl verify -CAfile ca.crt tls.crt" \
  openssl verify -CAfile "${dev_certs}/ca.crt" "${dev_certs}/tls.crt"
check "tls.key matches tls.crt" key_matches_cert "${dev_certs}/tls.key" "${dev_certs}/tls.crt"

before="$(sums "${dev_certs}")"
check "gen-certs.sh run again says up to date" prints 'up to date' "${gen}" --out "${dev_certs}"
check "gen-certs.sh run again leaves the files alone" test "${before}" == "$(sums "${dev_certs}")"
check "gen-certs.sh --force regenerates" \
  changes_tls_crt "${dev_certs}" "${gen}" --out "${dev_certs}" --force

# --- certificates: RSA and other names ----------------------------------------------------------
rsa="${tmp}/rsa"
check "gen-certs.sh --key-type rsa makes RSA certs" "${gen}" --key-type rsa --days 90 --out "${rsa}"
check "RSA tls.crt key is rsaEncryption 2048 bit" is_rsa_2048 "${rsa}/tls.crt"
check "RSA tls.crt signed with sha256WithRSAEncryption" \
  has_text "${rsa}/tls.crt" 'Signature Algorithm: sha256WithRSAEncryption'
check "RSA ca.crt signed with sha256WithRSAEncryption" \
  has_text "${rsa}/ca.crt" 'Signature Algorithm: sha256WithRSAEncryption'
check "RSA openssl verify -CAfile ca.crt tls.crt" \
  openssl verify -CAfile "${rsa}/ca.crt" "${rsa}/tls.crt"
check "--days 90 makes a certificate valid for 90 days, not 91" \
  valid_days_between "${rsa}/tls.crt" 89 91
check "gen-certs.sh regenerates when ECDSA is asked of RSA files" \
  prints 'regenerating' "${gen}" --out "${rsa}"
check "... and the result is ECDSA" has_text "${rsa}/tls.crt" 'NIST CURVE: P-256'
other="${tmp}/other"
check "gen-certs.sh --service foo --namespace bar" \
  "${gen}" --service foo --namespace bar --out "${other}"
check "tls.crt SANs follow --service/--namespace" check_sans "${other}/tls.crt" foo bar
check "gen-certs.sh regenerates when the SANs change" \
  prints 'regenerating' "${gen}" --service baz --namespace bar --out "${other}"

# --- dev overlay --------------------------------------------------------------------------------
render_cab="${work}/certs/render-cabundle.sh"
dev_overlay="${work}/manifests/overlays/dev"
check "render-cabundle.sh --help prints usage" prints '^Usage:' "${render_cab}" --help
check "render-cabundle.sh refuses a non-CA certificate" \
  fails "${render_cab}" --stdout --ca "${dev_certs}/tls.crt"
check "render-cabundle.sh --stdout prints base64 of ca.crt" \
  bundle_is_ca "${render_cab}" "${dev_certs}/ca.crt"
check "render-cabundle.sh writes the dev overlay's inputs" \
  "${render_cab}" --ca "${dev_certs}/ca.crt" --overlay "${dev_overlay}" \
  --webhook mutate.gpuadmit.io
check "render-cabundle.sh finds the webhook names in the base by itself" \
  prints 'for: mutate\.gpuadmit\.io\)' \
  "${render_cab}" --ca "${dev_certs}/ca.crt" --overlay "${dev_overlay}"
check "staged tls.key is mode 0600" mode_is 600 "${dev_overlay}/tls/tls.key"
check "certs/.gitignore ignores dev/" grep -qx '/dev/' "${work}/certs/.gitignore"
check "overlays/dev/.gitignore ignores tls/" grep -qx '/tls/' "${dev_overlay}/.gitignore"
check "overlays/dev/.gitignore ignores cabundle-patch.yaml" \
  grep -qx '/cabundle-patch.yaml' "${dev_overlay}/.gitignore"
check "kubectl kustomize manifests/overlays/dev renders" render "${dev_overlay}" "${tmp}/dev.yaml"

# --- monitoring component -----------------------------------------------------------------------
# The example overlay of docs/monitoring.md as written there (cert-manager, the component, the
# release label), and the base with the component, without and with a namespace of its own.
overlays="${work}/manifests/overlays"
docs_example() { # docs_example DOC OUT: writes the doc's one yaml block that uses a component
  "${py}" - "$1" "$2" <<'EOF'
import re, sys
blocks = re.findall(r"```yaml\n(.*?)```", open(sys.argv[1]).read(), re.S)
found = [b for b in blocks if "kind: Kustomization" in b and "components:" in b]
if len(found) != 1:
    sys.exit("%s: %d yaml blocks of a Kustomization with components, want 1" %
             (sys.argv[1], len(found)))
open(sys.argv[2], "w").write(found[0])
EOF
}
mkdir -p "${overlays}/docs-example" "${overlays}/base-monitoring" "${overlays}/other-namespace"
check "docs/monitoring.md has one example overlay with components" \
  docs_example "${repo}/docs/monitoring.md" "${overlays}/docs-example/kustomization.yaml"
check "kubectl kustomize renders docs/monitoring.md's example overlay" \
  render "${overlays}/docs-example" "${tmp}/docs-example.yaml"
printf '%s\n' 'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' \
  'resources: [../../base]' 'components: [../monitoring]' \
  >"${overlays}/base-monitoring/kustomization.yaml"
check "kubectl kustomize renders base + components: [../monitoring]" \
  render "${overlays}/base-monitoring" "${tmp}/base-monitoring.yaml"
printf '%s\n' 'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' \
  'namespace: gpu-system' 'resources: [../../base]' 'components: [../monitoring]' \
  >"${overlays}/other-namespace/kustomization.yaml"
check "kubectl kustomize renders base + the component with namespace: gpu-system" \
  render "${overlays}/other-namespace" "${tmp}/other-namespace.yaml"

# --- rendered objects --------------------------------------------------------------------------
read -r -d '' PY_CHECKS <<'PYEOF'
import base64, json, os, re, subprocess, sys
import yaml

mode = sys.argv[1]
args = sys.argv[2:]

def report(ok, desc, detail=""):
    print(("PASS  " if ok else "FAIL  ") + desc + ("" if ok or not detail else ": " + detail))

def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

def by_kind(docs):
    out = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out

def one(kinds, kind, name=None):
    items = [d for d in kinds.get(kind, []) if name is None or d["metadata"]["name"] == name]
    return items[0] if len(items) == 1 else None

def selector_matches(selector, labels):
    """metav1.LabelSelector semantics (matchLabels + matchExpressions)."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals: return False
        if op == "NotIn" and k in labels and labels[k] in vals: return False
        if op == "Exists" and k not in labels: return False
        if op == "DoesNotExist" and k in labels: return False
    return True

EXPECTED_RULES = {("", "v1", "pods"), ("apps", "v1", "deployments"),
                  ("apps", "v1", "replicasets"), ("apps", "v1", "statefulsets"),
                  ("apps", "v1", "daemonsets"), ("batch", "v1", "jobs"),
                  ("batch", "v1", "cronjobs"), ("ome.io", "*", "inferenceservices"),
                  ("resource.k8s.io", "v1", "resourceclaims"),
                  ("resource.k8s.io", "v1", "resourceclaimtemplates")}

def check_webhook(kinds, where, expect_ca=None):
    mwc = one(kinds, "MutatingWebhookConfiguration", "gpuadmit")
    report(mwc is not None, where + ": one MutatingWebhookConfiguration named gpuadmit")
    if mwc is None:
        return
    hooks = mwc.get("webhooks") or []
    report([h.get("name") for h in hooks] == ["mutate.gpuadmit.io"],
           where + ": exactly one webhook, mutate.gpuadmit.io", str([h.get("name") for h in hooks]))
    if not hooks:
        return
    h = hooks[0]
    for field, want in (("admissionReviewVersions", ["v1", "v1beta1"]), ("sideEffects", "None"),
                        ("failurePolicy", "Ignore"), ("timeoutSeconds", 5),
                        ("reinvocationPolicy", "IfNeeded"), ("matchPolicy", "Equivalent")):
        report(h.get(field) == want, "%s: webhook %s is %s" % (where, field, json.dumps(want)),
               "got " + json.dumps(h.get(field)))
    svc = (h.get("clientConfig") or {}).get("service")
    want_svc = {"namespace": "gpuadmit", "name": "gpuadmit", "path": "/mutate", "port": 443}
    report(svc == want_svc, where + ": clientConfig.service is gpuadmit/gpuadmit:443/mutate",
           json.dumps(svc))
    ca = (h.get("clientConfig") or {}).get("caBundle")
    if expect_ca is None:
        report(ca is None, where + ": no caBundle in the base (an overlay provides it)")
    else:
        got = base64.b64decode(ca).decode() if ca else ""
        report(got == expect_ca, where + ": caBundle is the generated ca.crt")
    ns_sel = h.get("namespaceSelector") or {}
    names_out = [e for e in ns_sel.get("matchExpressions") or []
                 if e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn"]
    report(bool(names_out) and {"kube-system", "gpuadmit"} <= set(names_out[0].get("values", [])),
           where + ": namespaceSelector: kubernetes.io/metadata.name NotIn kube-system, gpuadmit")
    namespace_obj = one(kinds, "Namespace", "gpuadmit")
    own_labels = dict((namespace_obj or {}).get("metadata", {}).get("labels") or {})
    own_labels["kubernetes.io/metadata.name"] = "gpuadmit"
    cases = [("kube-system", {"kubernetes.io/metadata.name": "kube-system"}, False),
             ("gpuadmit (as rendered)", own_labels, False),
             ("gpuadmit without its opt-out label",
              {"kubernetes.io/metadata.name": "gpuadmit"}, False),
             ("default", {"kubernetes.io/metadata.name": "default"}, True),
             ("ml labelled gpuadmit.io/ignore=true",
              {"kubernetes.io/metadata.name": "ml", "gpuadmit.io/ignore": "true"}, False)]
    for label, labels, want in cases:
        report(selector_matches(ns_sel, labels) == want, "%s: namespace %s is %s" %
               (where, label, "admitted" if want else "skipped"))
    obj_sel = h.get("objectSelector") or {}
    report(selector_matches(obj_sel, {"app": "x"}) and
           not selector_matches(obj_sel, {"app": "x", "gpuadmit.io/ignore": "true"}),
           where + ": objectSelector skips objects labelled gpuadmit.io/ignore=true")
    got, bad = set(), []
    for r in h.get("rules") or []:
        if (sorted(r.get("operations", [])) != ["CREATE", "UPDATE"] or
                r.get("scope") != "Namespaced"):
            bad.append(r)
        for g in r.get("apiGroups", []):
            for v in r.get("apiVersions", []):
                for res in r.get("resources", []):
                    got.add((g, v, res))
    report(got == EXPECTED_RULES, where + ": rules cover pods, deployments, replicasets, "
           "statefulsets, daemonsets, jobs, cronjobs, the policy's OME inferenceservices, DRA "
           "claims and claim templates, and nothing else", str(sorted(got)))
    report(not bad, where + ": every rule is CREATE+UPDATE, scope Namespaced", str(bad))

def check_base(kinds, where, policy_text):
    for kind in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment",
                 "Service", "PodDisruptionBudget", "ConfigMap", "MutatingWebhookConfiguration"):
        n = len(kinds.get(kind, []))
        report(n == 1, "%s: one %s" % (where, kind), "found %d" % n)
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                      "MutatingWebhookConfiguration"}
    wrong = ["%s/%s" % (d["kind"], d["metadata"]["name"]) for ds in kinds.values() for d in ds
             if d["kind"] not in cluster_scoped and d["metadata"].get("namespace") != "gpuadmit"]
    report(not wrong, where + ": every namespaced object is in namespace gpuadmit", str(wrong))
    report(one(kinds, "Namespace", "gpuadmit") is not None, where + ": Namespace gpuadmit")

    role = one(kinds, "ClusterRole", "gpuadmit")
    perms = set()
    extra = []
    for r in (role or {}).get("rules") or []:
        if r.get("resourceNames") or r.get("nonResourceURLs"):
            extra.append(r)
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    perms.add((g, res, v))
    want = {("", res, v) for res in ("nodes", "pods") for v in ("get", "list", "watch")}
    want |= {("", "pods", "patch"), ("", "events", "create")}  # the capacity queue's lifter
    want |= {("resource.k8s.io", res, v)
             for res in ("resourceslices", "resourceclaims", "deviceclasses",
                         "resourceclaimtemplates") for v in ("get", "list", "watch")}
    report(perms == want and not extra,
           where + ": ClusterRole grants exactly get/list/watch on nodes, pods and the DRA kinds, "
           "patch on pods and create on events",
           str(sorted(perms)))
    lease_role = one(kinds, "Role", "gpuadmit-leader-election") or {}
    lease_perms = set()
    for r in lease_role.get("rules") or []:
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    lease_perms.add((g, res, v, tuple(r.get("resourceNames") or ())))
    want_lease = {("coordination.k8s.io", "leases", "create", ()),
                  ("coordination.k8s.io", "leases", "get", ("gpuadmit",)),
                  ("coordination.k8s.io", "leases", "update", ("gpuadmit",))}
    report(lease_perms == want_lease and
           lease_role.get("metadata", {}).get("namespace") == "gpuadmit",
           where + ": Role grants exactly get/update on lease gpuadmit and create on leases, "
           "in namespace gpuadmit", str(sorted(lease_perms)))
    rb = one(kinds, "RoleBinding", "gpuadmit-leader-election") or {}
    report(rb.get("subjects") == [{"kind": "ServiceAccount", "name": "gpuadmit",
                                   "namespace": "gpuadmit"}] and
           (rb.get("roleRef") or {}).get("name") == "gpuadmit-leader-election",
           where + ": RoleBinding binds the lease Role to SA gpuadmit/gpuadmit")
    crb = one(kinds, "ClusterRoleBinding", "gpuadmit") or {}
    report(crb.get("roleRef") == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "gpuadmit"} and
           crb.get("subjects") == [{"kind": "ServiceAccount", "name": "gpuadmit",
                                    "namespace": "gpuadmit"}],
           where + ": ClusterRoleBinding binds ClusterRole gpuadmit to SA gpuadmit/gpuadmit")
    report(one(kinds, "ServiceAccount", "gpuadmit") is not None,
           where + ": ServiceAccount gpuadmit")

    cm = (kinds.get("ConfigMap") or [{}])[0]
    cm_name = cm.get("metadata", {}).get("name", "")
    report(cm_name.startswith("gpuadmit-policy"), where + ": ConfigMap is gpuadmit-policy[-hash]",
           cm_name)
    report((cm.get("data") or {}).get("policy.yaml") == policy_text,
           where + ": ConfigMap key policy.yaml is manifests/examples/policy.yaml verbatim")

    dep = one(kinds, "Deployment", "gpuadmit") or {}
    spec = dep.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    pod_labels = spec.get("template", {}).get("metadata", {}).get("labels") or {}
    report(spec.get("replicas") == 3, where + ": Deployment replicas 3", str(spec.get("replicas")))
    report(selector_matches(spec.get("selector") or {}, pod_labels),
           where + ": Deployment selector matches its pod template")
    containers = pod.get("containers") or [{}]
    c = containers[0]
    image = "gpuadmit:" + os.environ["GPUADMIT_VERSION"]
    report(len(containers) == 1 and c.get("image") == image and
           c.get("imagePullPolicy") == "IfNotPresent",
           where + ": one container, image %s (the release the kustomization pins), "
           "IfNotPresent" % image, str(c.get("image")))
    want_args = ["serve", "--policy", "/etc/gpuadmit/policy.yaml", "--tls-cert",
                 "/etc/gpuadmit/tls/tls.crt", "--tls-key", "/etc/gpuadmit/tls/tls.key",
                 "--listen", "0.0.0.0:8443", "--metrics-listen", "0.0.0.0:9090",
                 "--leader-elect", "--advertise", "$(POD_IP):8443"]
    report(c.get("args") == want_args and "command" not in c,
           where + ": container args are the documented serve command line", str(c.get("args")))
    env = {e.get("name"): e for e in (c.get("env") or [])}
    report(((env.get("POD_IP") or {}).get("valueFrom") or {}).get("fieldRef", {})
           .get("fieldPath") == "status.podIP",
           where + ": POD_IP from the downward API (--advertise $(POD_IP):8443)")
    report({"name": "https", "containerPort": 8443} in
           [{k: p.get(k) for k in ("name", "containerPort")} for p in c.get("ports") or []],
           where + ": containerPort 8443 named https")
    report({"name": "metrics", "containerPort": 9090} in
           [{k: p.get(k) for k in ("name", "containerPort")} for p in c.get("ports") or []],
           where + ": containerPort 9090 named metrics (--metrics-listen)")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = (c.get(probe) or {}).get("httpGet") or {}
        report(get.get("path") == path and get.get("scheme") == "HTTPS" and
               get.get("port") in ("https", 8443),
               "%s: %s GET %s over HTTPS on 8443" % (where, probe, path), json.dumps(get))
    res = c.get("resources") or {}
    report(res == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
           where + ": resources requests cpu 100m memory 128Mi, limits memory 512Mi", str(res))
    psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    eff = lambda k: csc.get(k, psc.get(k))
    report(eff("runAsNonRoot") is True and eff("runAsUser") == 65532,
           where + ": runs as non-root uid 65532")
    report(csc.get("readOnlyRootFilesystem") is True, where + ": readOnlyRootFilesystem")
    report(csc.get("allowPrivilegeEscalation") is False, where + ": allowPrivilegeEscalation false")
    report((csc.get("capabilities") or {}).get("drop") == ["ALL"] and
           not (csc.get("capabilities") or {}).get("add"), where + ": capabilities drop ALL")
    report((eff("seccompProfile") or {}).get("type") == "RuntimeDefault",
           where + ": seccompProfile RuntimeDefault")
    report(not csc.get("privileged"), where + ": not privileged")
    report(pod.get("priorityClassName") == "system-cluster-critical",
           where + ": priorityClassName system-cluster-critical")
    report(pod.get("serviceAccountName") == "gpuadmit", where + ": serviceAccountName gpuadmit")
    report(pod.get("terminationGracePeriodSeconds") == 30,
           where + ": terminationGracePeriodSeconds 30")
    pre = (c.get("lifecycle") or {}).get("preStop") or {}
    secs = (pre.get("sleep") or {}).get("seconds")
    report((isinstance(secs, int) and 1 <= secs < 30) or "exec" in pre,
           where + ": preStop sleeps a few seconds so endpoints drain", json.dumps(pre))
    tsc = {t.get("topologyKey"): t for t in pod.get("topologySpreadConstraints") or []}
    report("kubernetes.io/hostname" in tsc and
           tsc.get("topology.kubernetes.io/zone", {}).get("whenUnsatisfiable") == "ScheduleAnyway",
           where + ": spread over hostname, and over zone with ScheduleAnyway")
    report(all(selector_matches(t.get("labelSelector") or {}, pod_labels) for t in tsc.values()),
           where + ": spread constraints select the webhook's own pods")
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts") or []}
    pol = volumes.get(mounts.get("/etc/gpuadmit"), {})
    report((pol.get("configMap") or {}).get("name") == cm_name,
           where + ": the policy ConfigMap (hashed name) is mounted at /etc/gpuadmit")
    tls = volumes.get(mounts.get("/etc/gpuadmit/tls"), {})
    report((tls.get("secret") or {}).get("secretName") == "gpuadmit-tls",
           where + ": Secret gpuadmit-tls is mounted at /etc/gpuadmit/tls")

    svc = one(kinds, "Service", "gpuadmit") or {}
    ports = (svc.get("spec") or {}).get("ports") or []
    report(any(p.get("port") == 443 and p.get("targetPort") in ("https", 8443) for p in ports),
           where + ": Service gpuadmit port 443 -> targetPort https")
    report(selector_matches({"matchLabels": svc.get("spec", {}).get("selector") or {"x": "y"}},
                            pod_labels), where + ": Service selects the webhook pods")
    pdb = (one(kinds, "PodDisruptionBudget", "gpuadmit") or {}).get("spec", {})
    report(pdb.get("minAvailable") == 2 or pdb.get("maxUnavailable") == 1,
           where + ": PodDisruptionBudget minAvailable 2 or maxUnavailable 1", str(pdb))
    report(selector_matches(pdb.get("selector") or {"matchLabels": {"x": "y"}}, pod_labels),
           where + ": PodDisruptionBudget selects the webhook pods")

if mode == "base":
    path, policy_path = args
    kinds = by_kind(load(path))
    check_base(kinds, "base", open(policy_path).read())
    check_webhook(kinds, "base")
    report("Secret" not in kinds, "base: no Secret (the key pair comes from an overlay)")

elif mode == "cert-manager":
    path, policy_path = args
    kinds = by_kind(load(path))
    check_base(kinds, "cert-manager", open(policy_path).read())
    check_webhook(kinds, "cert-manager")
    mwc = one(kinds, "MutatingWebhookConfiguration", "gpuadmit") or {}
    ann = (mwc.get("metadata") or {}).get("annotations") or {}
    report(ann.get("cert-manager.io/inject-ca-from") == "gpuadmit/gpuadmit-serving",
           "cert-manager: webhook annotated "
           "cert-manager.io/inject-ca-from: gpuadmit/gpuadmit-serving")
    serving = one(kinds, "Certificate", "gpuadmit-serving") or {}
    ss = serving.get("spec") or {}
    report(serving.get("metadata", {}).get("namespace") == "gpuadmit" and
           ss.get("secretName") == "gpuadmit-tls",
           "cert-manager: Certificate gpuadmit/gpuadmit-serving writes Secret gpuadmit-tls")
    report({"gpuadmit.gpuadmit.svc", "gpuadmit.gpuadmit.svc.cluster.local"} <=
           set(ss.get("dnsNames") or []), "cert-manager: serving Certificate names the service")
    ca_cert = one(kinds, "Certificate", "gpuadmit-ca") or {}
    cs = ca_cert.get("spec") or {}
    issuers = {i["metadata"]["name"]: i.get("spec") or {} for i in kinds.get("Issuer", [])}
    sref, cref = ss.get("issuerRef") or {}, cs.get("issuerRef") or {}
    report(cs.get("isCA") is True and cref.get("kind") == "Issuer" and
           "selfSigned" in issuers.get(cref.get("name"), {}),
           "cert-manager: CA Certificate is isCA and issued by a selfSigned Issuer")
    report(sref.get("kind") == "Issuer" and
           (issuers.get(sref.get("name"), {}).get("ca") or {}).get("secretName") ==
           cs.get("secretName"),
           "cert-manager: serving Certificate is issued by a CA Issuer over the CA's Secret")

elif mode == "dev":
    path, policy_path, ca_path, crt_path, key_path = args
    kinds = by_kind(load(path))
    check_base(kinds, "dev", open(policy_path).read())
    check_webhook(kinds, "dev", expect_ca=open(ca_path).read())
    secret = one(kinds, "Secret", "gpuadmit-tls") or {}
    report(secret.get("type") == "kubernetes.io/tls" and
           secret.get("metadata", {}).get("namespace") == "gpuadmit",
           "dev: Secret gpuadmit/gpuadmit-tls of type kubernetes.io/tls")
    data = secret.get("data") or {}
    dec = lambda k: base64.b64decode(data.get(k, "")).decode()
    report(dec("tls.crt") == open(crt_path).read() and dec("tls.key") == open(key_path).read(),
           "dev: Secret holds the generated tls.crt and tls.key")

elif mode == "demo":
    committed, regenerated, readme = args
    text = open(committed).read()
    try:
        cluster = json.loads(text)
        report(True, "demo-cluster.json is valid JSON")
    except ValueError as e:
        report(False, "demo-cluster.json is valid JSON", str(e))
        sys.exit(0)
    report(text == open(regenerated).read(),
           "demo-cluster.json is what make-demo-cluster.py generates (rerun it after edits)")
    report(cluster.get("apiVersion") == "v1" and cluster.get("kind") == "List" and
           cluster.get("metadata") == {"resourceVersion": ""},
           "demo-cluster.json is a v1 List as kubectl prints it")
    items = cluster.get("items") or []
    nodes = {i["metadata"]["name"]: i for i in items if i.get("kind") == "Node"}
    pods = [i for i in items if i.get("kind") == "Pod"]
    report(set(nodes) == {"gpu-sim-control-plane", "gpu-small", "gpu-medium"},
           "demo: nodes gpu-small, gpu-medium and a control plane", str(sorted(nodes)))
    def mig(n):
        return {k: v for k, v in n["status"]["allocatable"].items() if "nvidia.com/" in k}
    want_alloc = {"gpu-small": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "28"},
                  "gpu-medium": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "4",
                                 "nvidia.com/mig-2g.20gb": "12"}}
    for name, want in want_alloc.items():
        n = nodes.get(name)
        if not n:
            continue
        st, labels = n["status"], n["metadata"]["labels"]
        report(mig(n) == want and {k: v for k, v in st["capacity"].items()
                                   if "nvidia.com/" in k} == want,
               "demo: %s capacity = allocatable = %s" % (name, want), str(mig(n)))
        report(all(k in st["allocatable"] for k in ("cpu", "memory", "pods", "ephemeral-storage")),
               "demo: %s allocatable has cpu, memory, pods, ephemeral-storage" % name)
        gfd = {"nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.memory": "71680",
               "nvidia.com/gpu.count": "4", "nvidia.com/mig.strategy": "mixed",
               "nvidia.com/mig.capable": "true", "kubernetes.io/hostname": name}
        for r, q in want.items():
            if r.startswith("nvidia.com/mig-"):
                gfd[r + ".count"] = q
        report(all(labels.get(k) == v for k, v in gfd.items()),
               "demo: %s has the GFD labels of a 4-GPU H200 MIG mixed node" % name,
               str({k: labels.get(k) for k in gfd}))
        profile_keys = [k for k in labels if k.startswith("nvidia.com/mig-")]
        report(all(any(k.endswith(s) for k in profile_keys) for s in
                   (".memory", ".multiprocessors", ".slices.gi", ".slices.ci",
                    ".engines.copy", ".engines.decoder", ".engines.encoder", ".engines.jpeg",
                    ".engines.ofa", ".product")),
               "demo: %s has GFD per-profile labels (memory, multiprocessors, slices, engines)"
               % name)
    for name, n in nodes.items():
        ready = [c for c in n["status"].get("conditions", []) if c["type"] == "Ready"]
        report(ready and ready[0]["status"] == "True" and n["metadata"].get("uid") and
               n["status"].get("nodeInfo"), "demo: node %s is Ready, with uid and nodeInfo" % name)
    cp = nodes.get("gpu-sim-control-plane", {"spec": {}, "status": {"allocatable": {}}})
    report({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in
           [{k: t.get(k) for k in ("key", "effect")} for t in cp["spec"].get("taints", [])] and
           not any("nvidia.com/" in k for k in cp["status"]["allocatable"]),
           "demo: control plane is tainted NoSchedule and has no GPUs")
    # Free devices, computed here independently of make-demo-cluster.py.
    free = {n: {r: int(q) for r, q in mig(nodes[n]).items() if r != "nvidia.com/gpu"}
            for n in want_alloc if n in nodes}
    for p in pods:
        node_name = p["spec"].get("nodeName")
        if p["status"].get("phase") in ("Succeeded", "Failed") or node_name not in free:
            continue
        for c in p["spec"]["containers"] + p["spec"].get("initContainers", []):
            for r, q in (c.get("resources", {}).get("requests") or {}).items():
                if r in free[node_name]:
                    free[node_name][r] -= int(q)
    want_free = {"gpu-small": {"nvidia.com/mig-1g.10gb": 22},
                 "gpu-medium": {"nvidia.com/mig-1g.10gb": 3, "nvidia.com/mig-2g.20gb": 7}}
    report(free == want_free, "demo: free MIG devices are small 1g:22, medium 1g:3 2g:7",
           str(free))
    readme_text = open(readme).read()
    report(all(s in readme_text for s in ("22 of 28", "7 of 12", "3 of 4")),
           "demo: examples/README.md states the same free counts")
    gpu_values = [q for p in pods for c in p["spec"]["containers"]
                  for part in ("limits", "requests")
                  for r, q in (c.get("resources", {}).get(part) or {}).items()
                  if r.startswith("nvidia.com/")]
    report(gpu_values and all(isinstance(q, str) for q in gpu_values),
           "demo: GPU quantities in pods are strings in limits and requests")
    report(any(p["status"]["phase"] == "Succeeded" and p["spec"].get("nodeName") for p in pods) and
           any(p["status"]["phase"] == "Pending" and not p["spec"].get("nodeName") for p in pods),
           "demo: has a Succeeded GPU pod and a Pending unbound GPU pod")
    report(all(p["metadata"].get("uid") and p["status"].get("phase") for p in pods),
           "demo: every pod has a uid and a phase")
elif mode == "monitoring":
    example, cert_manager, with_base, base, other_ns, component = args
    ADDED = {("Service", "gpuadmit-metrics"), ("ServiceMonitor", "gpuadmit"),
             ("PrometheusRule", "gpuadmit"), ("ConfigMap", "gpuadmit-dashboard")}
    key = lambda d: (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace") or "")
    rules_src = yaml.safe_load(open(component + "/prometheusrule.yaml"))["spec"]
    dashboard_src = json.load(open(component + "/dashboards/gpuadmit.json"))

    def check_monitoring(where, path, without_path, namespace, release):
        docs = load(path)
        added = [d for d in docs if key(d)[:2] in ADDED]
        rest = sorted((d for d in docs if key(d)[:2] not in ADDED), key=key)
        report(sorted(key(d)[:2] for d in added) == sorted(ADDED),
               where + ": adds Service gpuadmit-metrics, ServiceMonitor gpuadmit, PrometheusRule "
               "gpuadmit and ConfigMap gpuadmit-dashboard", str(sorted(key(d) for d in added)))
        if without_path:
            report(rest == sorted(load(without_path), key=key),
                   where + ": every other object renders as without the component")
        kinds = by_kind(docs)
        dep = one(kinds, "Deployment", "gpuadmit") or {}
        report(dep.get("metadata", {}).get("namespace") == namespace and
               all(d["metadata"].get("namespace") == namespace for d in added),
               "%s: the component's objects are in the Deployment's namespace %s" %
               (where, namespace),
               str([key(d) for d in added]))
        sm = one(kinds, "ServiceMonitor", "gpuadmit") or {}
        spec = sm.get("spec") or {}
        sm_ns = sm.get("metadata", {}).get("namespace")
        services = [s for s in kinds.get("Service", []) if s["metadata"].get("namespace") == sm_ns
                    and "namespaceSelector" not in spec and
                    selector_matches(spec.get("selector") or {"matchLabels": {"x": "y"}},
                                     s["metadata"].get("labels") or {})]
        report([s["metadata"]["name"] for s in services] == ["gpuadmit-metrics"],
               where + ": the ServiceMonitor selects Service gpuadmit-metrics only",
               str([s["metadata"]["name"] for s in services]))
        svc = one(kinds, "Service", "gpuadmit-metrics") or {}
        eps = spec.get("endpoints") or []
        report(len(eps) == 1 and eps[0].get("path") == "/metrics" and
               eps[0].get("scheme") == "http", where + ": one endpoint, http /metrics", str(eps))
        ports = {p.get("name"): p for p in (svc.get("spec") or {}).get("ports") or []}
        port = ports.get(eps[0].get("port") if eps else None) or {}
        pod = ((dep.get("spec") or {}).get("template") or {})
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        cports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
        args_ = container.get("args") or []
        listen = args_[args_.index("--metrics-listen") + 1] if "--metrics-listen" in args_ else ""
        target = cports.get(port.get("targetPort"), port.get("targetPort"))
        report(bool(port) and target is not None and listen.endswith(":%s" % target),
               where + ": the endpoint's Service port reaches the container's --metrics-listen "
               "port", "port %s -> %s; --metrics-listen %r" % (port, target, listen))
        report(selector_matches({"matchLabels": (svc.get("spec") or {}).get("selector") or
                                 {"x": "y"}}, pod_labels),
               where + ": Service gpuadmit-metrics selects the webhook pods")
        job = (svc.get("metadata", {}).get("labels") or {}).get(spec.get("jobLabel"),
                                                                svc["metadata"]["name"]
                                                                if svc else None)
        rule = one(kinds, "PrometheusRule", "gpuadmit") or {}
        exprs = [r.get("expr", "") for g in (rule.get("spec") or {}).get("groups") or []
                 for r in g.get("rules") or []]
        jobs = set(re.findall(r'\bjob\s*=\s*"([^"]*)"', " ".join(exprs)))
        report(job == "gpuadmit" and jobs == {"gpuadmit"},
               where + ': targets get job="gpuadmit", the job the alerts query',
               "job label %r, rules query %s" % (job, sorted(jobs)))
        report(rule.get("spec") == rules_src,
               where + ": the PrometheusRule's groups render unchanged")
        cm = one(kinds, "ConfigMap", "gpuadmit-dashboard") or {}
        data = cm.get("data") or {}
        report((cm.get("metadata", {}).get("labels") or {}).get("grafana_dashboard") == "1",
               where + ': ConfigMap gpuadmit-dashboard (no hash suffix) labelled '
               'grafana_dashboard: "1"')
        try:
            same = list(data) == ["gpuadmit.json"] and \
                json.loads(data["gpuadmit.json"]) == dashboard_src
        except ValueError:
            same = False
        report(same, where + ": the ConfigMap holds dashboards/gpuadmit.json as gpuadmit.json",
               str(list(data)))
        if release:
            got = [(d.get("metadata", {}).get("labels") or {}).get("release") for d in (sm, rule)]
            report(got == [release, release],
                   "%s: ServiceMonitor and PrometheusRule labelled release: %s" % (where, release),
                   str(got))

    check_monitoring("docs example", example, cert_manager, "gpuadmit", "kube-prometheus-stack")
    check_monitoring("base + monitoring", with_base, base, "gpuadmit", None)
    check_monitoring("namespace gpu-system", other_ns, None, "gpu-system", None)

else:
    print("unknown mode " + mode)
    sys.exit(2)
PYEOF

policy="${work}/manifests/examples/policy.yaml"
# One version everywhere: CMakeLists.txt, the image the base pins, the newest CHANGELOG entry.
changelog_top="$(sed -n 's/^## \[\([0-9][0-9.]*\)\].*/\1/p' "${repo}/CHANGELOG.md" | head -n 1)"
check "CHANGELOG.md's newest release is ${GPUADMIT_VERSION} (CMakeLists.txt's version)" \
  test -n "${GPUADMIT_VERSION}" -a "${changelog_top}" = "${GPUADMIT_VERSION}"
[[ -s "${tmp}/base.yaml" ]] && run_py_checks base "${tmp}/base.yaml" "${policy}"
[[ -s "${tmp}/cert-manager.yaml" ]] &&
  run_py_checks cert-manager "${tmp}/cert-manager.yaml" "${policy}"
[[ -s "${tmp}/dev.yaml" ]] && run_py_checks dev "${tmp}/dev.yaml" "${policy}" \
  "${dev_certs}/ca.crt" "${dev_certs}/tls.crt" "${dev_certs}/tls.key"
[[ -s "${tmp}/docs-example.yaml" && -s "${tmp}/cert-manager.yaml" && -s "${tmp}/base.yaml" &&
  -s "${tmp}/base-monitoring.yaml" && -s "${tmp}/other-namespace.yaml" ]] &&
  run_py_checks monitoring "${tmp}/docs-example.yaml" "${tmp}/cert-manager.yaml" \
    "${tmp}/base-monitoring.yaml" "${tmp}/base.yaml" "${tmp}/other-namespace.yaml" \
    "${work}/manifests/overlays/monitoring"

# --- examples ----------------------------------------------------------------------------------
examples="${repo}/manifests/examples"
check "make-demo-cluster.py runs" "${py}" "${examples}/make-demo-cluster.py" "${tmp}/demo.json"
[[ -s "${tmp}/demo.json" ]] && run_py_checks demo "${examples}/demo-cluster.json" \
  "${tmp}/demo.json" "${examples}/README.md"

echo "${passed} passed, ${failed} failed"
((failed == 0))
