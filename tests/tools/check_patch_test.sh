#!/bin/bash
# Self-test of tests/tools/check_patch.py: hand-made good and bad AdmissionReview responses
# against the GPU review fixtures. Prints one line per case and "N passed, M failed";
# exits 1 when any case fails. Needs /usr/bin/python3 with python3-jsonpatch, coreutils base64.
set -u
cd "$(dirname "$0")/../.." || exit 2
PY=${PYTHON:-/usr/bin/python3}
CHECK="$PY tests/tools/check_patch.py"
G=tests/fixtures/gpu
POD=$G/kubectl-pod.json
DEP=$G/kubectl-deployment.json
CJ=$G/kubectl-cronjob.json
V1B=$G/kubectl-pod-v1beta1.json
LO=$G/pod-runai-reservation-limits-only.json
DEL=tests/fixtures/admission/wrapped-pod-delete-with-oldobject.json
for f in $POD $DEP $CJ $V1B $LO $DEL; do
  [ -f "$f" ] || { echo "missing fixture $f (run tests/tools/make_gpu_reviews.py / import_shared_fixtures.py)"; exit 2; }
done

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
uid_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["request"]["uid"])' "$1"; }
UPOD=$(uid_of $POD); UDEP=$(uid_of $DEP); UCJ=$(uid_of $CJ); UV1B=$(uid_of $V1B); ULO=$(uid_of $LO); UDEL=$(uid_of $DEL)
V1=admission.k8s.io/v1
V1B1=admission.k8s.io/v1beta1

b64() { printf '%s' "$1" | base64 -w0; }
# resp FILE APIVERSION UID BODY   (BODY = the members of .response after uid)
resp() { printf '{"apiVersion":"%s","kind":"AdmissionReview","response":{"uid":"%s",%s}}' "$2" "$3" "$4" >"$T/$1"; }
# pbody PATCHJSON -> allowed + patchType + base64 patch
pbody() { printf '"allowed":true,"patchType":"JSONPatch","patch":"%s"' "$(b64 "$1")"; }
rep() { $PY -c 'import sys; print(sys.argv[1] * int(sys.argv[2]), end="")' "$1" "$2"; }

pass=0; failn=0
# expect NAME WANT(ok|fail) REVIEW RESPONSE_FILE [GREP_IN_STDERR_OR_STDOUT]
expect() {
  local name=$1 want=$2 review=$3 rfile=$4 grepfor=${5:-}
  local out err rc
  out=$($CHECK "$review" "$T/$rfile" --print-patched 2>"$T/err"); rc=$?
  err=$(cat "$T/err")
  local ok=0
  if [ "$want" = ok ] && [ $rc -eq 0 ]; then ok=1; fi
  if [ "$want" = fail ] && [ $rc -eq 1 ] && [ "$(printf '%s\n' "$err" | grep -c '^check_patch: FAIL: ')" -eq 1 ]; then ok=1; fi
  if [ $ok -eq 1 ] && [ -n "$grepfor" ] && ! printf '%s\n%s\n' "$out" "$err" | grep -qF -- "$grepfor"; then ok=0; fi
  if [ $ok -eq 1 ]; then
    pass=$((pass + 1)); printf 'ok    %-44s %s\n' "$name" "${err:-(exit 0)}"
  else
    failn=$((failn + 1)); printf 'FAIL  %-44s want %s, rc=%d, stderr: %s\n' "$name" "$want" $rc "$err"
  fi
}

C0=/spec/containers/0/resources
FALLBACK='[{"op":"remove","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb"},{"op":"add","path":"'$C0'/limits/nvidia.com~1mig-1g.10gb","value":"1"},{"op":"remove","path":"'$C0'/requests/nvidia.com~1mig-2g.20gb"},{"op":"add","path":"'$C0'/requests/nvidia.com~1mig-1g.10gb","value":"1"},{"op":"add","path":"/metadata/annotations","value":{}},{"op":"add","path":"/metadata/annotations/gpuadmit.io~1fallback","value":"2g.20gb->1g.10gb"}]'

# ---------------------------------------------------------------- good
resp good-nopatch.json $V1 "$UPOD" '"allowed":true'
expect "good: allowed, no patch" ok $POD good-nopatch.json

resp good-fallback.json $V1 "$UPOD" "$(pbody "$FALLBACK")"
expect "good: seed-003 fallback patch" ok $POD good-fallback.json '"gpuadmit.io/fallback": "2g.20gb->1g.10gb"'

AFF='[{"op":"add","path":"/spec/template/spec/affinity","value":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"preference":{"matchExpressions":[{"key":"nvidia.com/mig-2g.20gb.count","operator":"Gt","values":["0"]}]}}]}}},{"op":"add","path":"/spec/template/metadata/annotations","value":{"gpuadmit.io/node":"gpu-sim-cluster-worker2"}}]'
resp good-deploy-affinity.json $V1 "$UDEP" "$(pbody "$AFF")"
expect "good: deployment template affinity" ok $DEP good-deploy-affinity.json

TOL='[{"op":"add","path":"/spec/jobTemplate/spec/template/spec/tolerations","value":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}]'
resp good-cron-tol.json $V1 "$UCJ" "$(pbody "$TOL")"
expect "good: cronjob toleration" ok $CJ good-cron-tol.json

resp good-v1beta1.json $V1B1 "$UV1B" '"allowed":true'
expect "good: v1beta1 echo" ok $V1B good-v1beta1.json

resp good-warn256.json $V1 "$UPOD" "\"allowed\":true,\"warnings\":[\"$(rep w 256)\"]"
expect "good: one 256-char warning" ok $POD good-warn256.json

resp good-deny.json $V1 "$UPOD" '"allowed":false,"status":{"code":403,"message":"no MIG profile free"}'
expect "good: denied with status" ok $POD good-deny.json

LOP='[{"op":"replace","path":"'$C0'/limits","value":{"nvidia.com/mig-1g.10gb":"1"}}]'
resp good-limits-only.json $V1 "$ULO" "$(pbody "$LOP")"
expect "good: limits-only container patched" ok $LO good-limits-only.json

resp good-delete.json $V1 "$UDEL" '"allowed":true'
expect "good: DELETE passes untouched" ok $DEL good-delete.json

resp good-empty-patch.json $V1 "$UPOD" "$(pbody '[]')"
expect "good: empty patch array" ok $POD good-empty-patch.json

resp good-1000m.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb","value":"1000m"}]')"
expect "good: 1000m equals 1 for MIG" ok $POD good-1000m.json

# ---------------------------------------------------------------- bad
resp bad-uid.json $V1 "00000000-0000-4000-8000-000000000000" '"allowed":true'
expect "bad: uid mismatch" fail $POD bad-uid.json "response.uid"

resp bad-apiversion.json $V1B1 "$UPOD" '"allowed":true'
expect "bad: v1beta1 answer to v1 review" fail $POD bad-apiversion.json "apiVersion"

printf '{"apiVersion":"%s","kind":"AdmissionResponse","response":{"uid":"%s","allowed":true}}' $V1 "$UPOD" >"$T/bad-kind.json"
expect "bad: kind not AdmissionReview" fail $POD bad-kind.json "kind"

resp bad-allowed-string.json $V1 "$UPOD" '"allowed":"true"'
expect "bad: allowed is a string" fail $POD bad-allowed-string.json "not a bool"

resp bad-allowed-missing.json $V1 "$UPOD" '"warnings":[]'
expect "bad: allowed missing" fail $POD bad-allowed-missing.json "allowed missing"

resp bad-patch-no-type.json $V1 "$UPOD" "\"allowed\":true,\"patch\":\"$(b64 '[]')\""
expect "bad: patch without patchType" fail $POD bad-patch-no-type.json "both"

resp bad-type-no-patch.json $V1 "$UPOD" '"allowed":true,"patchType":"JSONPatch"'
expect "bad: patchType without patch" fail $POD bad-type-no-patch.json "both"

resp bad-patchtype.json $V1 "$UPOD" "\"allowed\":true,\"patchType\":\"MergePatch\",\"patch\":\"$(b64 '[]')\""
expect "bad: patchType MergePatch" fail $POD bad-patchtype.json "JSONPatch"

resp bad-b64.json $V1 "$UPOD" '"allowed":true,"patchType":"JSONPatch","patch":"W3sib3Ai%%%"'
expect "bad: patch not base64" fail $POD bad-b64.json "base64"

resp bad-raw-json-patch.json $V1 "$UPOD" '"allowed":true,"patchType":"JSONPatch","patch":[]'
expect "bad: patch is a raw JSON array" fail $POD bad-raw-json-patch.json "base64"

resp bad-patch-object.json $V1 "$UPOD" "$(pbody '{"op":"add"}')"
expect "bad: patch is an object" fail $POD bad-patch-object.json "not an array"

resp bad-op.json $V1 "$UPOD" "$(pbody '[{"op":"merge","path":"/metadata","value":{}}]')"
expect "bad: unknown op" fail $POD bad-op.json "bad op"

resp bad-path.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"metadata/labels/x","value":"y"}]')"
expect "bad: path without leading /" fail $POD bad-path.json "path"

resp bad-tilde.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"/metadata/labels/a~2b","value":"y"}]')"
expect "bad: bad ~ escape in path" fail $POD bad-tilde.json "path"

resp bad-novalue.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"/metadata/labels/x"}]')"
expect "bad: add without value" fail $POD bad-novalue.json "no value"

resp bad-missing-parent.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"/metadata/annotations/gpuadmit.io~1fallback","value":"2g.20gb->1g.10gb"}]')"
expect "bad: add under missing annotations map" fail $POD bad-missing-parent.json "does not apply"

resp bad-unescaped.json $V1 "$UPOD" "$(pbody '[{"op":"remove","path":"'$C0'/limits/nvidia.com/mig-2g.20gb"}]')"
expect "bad: '/' in key not escaped as ~1" fail $POD bad-unescaped.json "does not apply"

resp bad-test-op.json $V1 "$UPOD" "$(pbody '[{"op":"test","path":"/metadata/name","value":"other"}]')"
expect "bad: failing test op" fail $POD bad-test-op.json "does not apply"

resp bad-no-image.json $V1 "$UPOD" "$(pbody '[{"op":"remove","path":"/spec/containers/0/image"}]')"
expect "bad: container loses image" fail $POD bad-no-image.json "image"

resp bad-no-containers.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"/spec/containers","value":[]}]')"
expect "bad: containers emptied" fail $POD bad-no-containers.json "containers"

resp bad-container-type.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"/spec/containers/-","value":"sidecar"}]')"
expect "bad: container is a string" fail $POD bad-container-type.json "not an object"

resp bad-quantity.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb","value":"abc"}]')"
expect "bad: quantity abc" fail $POD bad-quantity.json "quantity"

resp bad-quantity-num.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb","value":1}]')"
expect "bad: quantity as JSON number" fail $POD bad-quantity-num.json "not a quantity string"

resp bad-fraction.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb","value":"500m"},{"op":"replace","path":"'$C0'/requests/nvidia.com~1mig-2g.20gb","value":"500m"}]')"
expect "bad: fractional MIG quantity" fail $POD bad-fraction.json "whole numbers"

HALF='[{"op":"remove","path":"'$C0'/limits/nvidia.com~1mig-2g.20gb"},{"op":"add","path":"'$C0'/limits/nvidia.com~1mig-1g.10gb","value":"1"}]'
resp bad-half-fallback.json $V1 "$UPOD" "$(pbody "$HALF")"
expect "bad: fallback rewrote limits only" fail $POD bad-half-fallback.json "without a limit"

resp bad-req-ne-lim.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"'$C0'/requests/nvidia.com~1mig-2g.20gb","value":"2"}]')"
expect "bad: MIG requests != limits" fail $POD bad-req-ne-lim.json "must be equal"

resp bad-annotation-int.json $V1 "$UPOD" "$(pbody '[{"op":"add","path":"/metadata/annotations","value":{"gpuadmit.io/replicas":3}}]')"
expect "bad: annotation value not a string" fail $POD bad-annotation-int.json "annotations"

resp bad-tolerations.json $V1 "$UCJ" "$(pbody '[{"op":"add","path":"/spec/jobTemplate/spec/template/spec/tolerations","value":{"key":"nvidia.com/gpu"}}]')"
expect "bad: cronjob tolerations not a list" fail $CJ bad-tolerations.json "tolerations"

resp bad-weight.json $V1 "$UDEP" "$(pbody '[{"op":"add","path":"/spec/template/spec/affinity","value":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":0,"preference":{}}]}}}]')"
expect "bad: preferred affinity weight 0" fail $DEP bad-weight.json "weight"

resp bad-kind-change.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"/kind","value":"Deployment"}]')"
expect "bad: patch changes kind" fail $POD bad-kind-change.json "changed kind"

resp bad-name-change.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"/metadata/name","value":"other"}]')"
expect "bad: patch changes metadata.name" fail $POD bad-name-change.json "metadata.name"

resp bad-whole-object.json $V1 "$UPOD" "$(pbody '[{"op":"replace","path":"","value":[]}]')"
expect "bad: object replaced by an array" fail $POD bad-whole-object.json "not a JSON object"

resp bad-warn257.json $V1 "$UPOD" "\"allowed\":true,\"warnings\":[\"$(rep x 257)\"]"
expect "bad: 257-char warning" fail $POD bad-warn257.json "257"

W=$(rep x 256)
resp bad-warn-total.json $V1 "$UPOD" "\"allowed\":true,\"warnings\":[$($PY -c 'import json,sys; print(",".join([json.dumps(sys.argv[1])]*17))' "$W")]"
expect "bad: warnings > 4096 bytes" fail $POD bad-warn-total.json "4096"

resp bad-warn-type.json $V1 "$UPOD" '"allowed":true,"warnings":"careful"'
expect "bad: warnings not a list" fail $POD bad-warn-type.json "warnings"

resp bad-deny-patch.json $V1 "$UPOD" "\"allowed\":false,\"patchType\":\"JSONPatch\",\"patch\":\"$(b64 '[]')\""
expect "bad: patch on a denial" fail $POD bad-deny-patch.json "denied"

resp bad-delete-patch.json $V1 "$UDEL" "$(pbody '[{"op":"add","path":"/metadata/labels","value":{}}]')"
expect "bad: patch for DELETE (object null)" fail $DEL bad-delete-patch.json "null"

printf 'HTTP/1.1 500\r\n' >"$T/bad-notjson.json"
expect "bad: response not JSON" fail $POD bad-notjson.json "not JSON"

# --print-patched shows the untouched object when there is no patch
if $CHECK $POD "$T/good-nopatch.json" --print-patched | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["metadata"]["name"]=="gpu-pod" else 1)'; then
  pass=$((pass + 1)); echo "ok    --print-patched without a patch prints the object"
else
  failn=$((failn + 1)); echo "FAIL  --print-patched without a patch"
fi

echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
