#!/usr/bin/python3
"""check_patch.py REVIEW.json RESPONSE.json [--print-patched]

Checks a webhook's AdmissionReview RESPONSE against the rules the kube-apiserver applies to
the answer for REVIEW, then applies the JSON Patch with the `jsonpatch` library (an RFC 6902
implementation independent of gpuadmit's) and checks that the patched object still decodes
as its kind.

Response envelope:
  - apiVersion equals the review's apiVersion (admission.k8s.io/v1 or v1beta1); kind AdmissionReview
  - response.uid equals request.uid; response.allowed is a JSON bool
  - patch and patchType both present or both absent; patchType "JSONPatch";
    no patch on a denied answer (allowed: false)
  - patch is standard base64 of a JSON array of RFC 6902 operations (op/path/value/from,
    JSON Pointers well formed)
  - warnings: a list of strings, each <= 256 characters, all together <= 4096 bytes
  - auditAnnotations, when present, a map of string to string
Patched object (only when there is a patch; problems already present in request.object are
not blamed on the patch):
  - a JSON object; kind, apiVersion, metadata.name/namespace/generateName unchanged
  - metadata.labels / metadata.annotations maps of string to string
  - pod specs (Pod: spec; Deployment/ReplicaSet/StatefulSet/DaemonSet/Job: spec.template.spec;
    CronJob: spec.jobTemplate.spec.template.spec): containers a non-empty list of objects with a
    string name and image; initContainers likewise when present; every resources.limits /
    resources.requests a map of string to a Kubernetes quantity string; extended resources
    (e.g. nvidia.com/mig-2g.20gb) whole numbers, requests == limits when both are given and
    no request without a limit (the apiserver's validation); nodeSelector string map;
    tolerations a list of objects; affinity an object; template metadata labels/annotations
    string maps.

Exit 0 when everything holds; otherwise one line "check_patch: FAIL: ..." on stderr, exit 1.
--print-patched prints the patched object (or the unchanged object when there is no patch)
as JSON on stdout.  Needs /usr/bin/python3 with python3-jsonpatch (Debian).
"""
import argparse
import base64
import binascii
import copy
import json
import re
import sys
from decimal import Decimal

try:
    import jsonpatch
    import jsonpointer
except ImportError:  # pragma: no cover
    sys.stderr.write("check_patch: FAIL: python module jsonpatch missing "
                     "(apt-get install python3-jsonpatch; run with /usr/bin/python3)\n")
    sys.exit(1)

ADMISSION_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
MAX_WARNING_CHARS = 256
MAX_WARNINGS_BYTES = 4096

# resource.Quantity grammar: <signedNumber><suffix>, suffix = binarySI | decimalSI | exponent
QUANTITY_RE = re.compile(
    r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
OPS = {"add", "remove", "replace", "move", "copy", "test"}

POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


class Fail(Exception):
    pass


def fail(msg):
    raise Fail(msg)


def load(path, what):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail("cannot read %s %s: %s" % (what, path, e.strerror))
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail("%s %s is not JSON: %s" % (what, path, e))


def valid_pointer(p):
    if not isinstance(p, str):
        return False
    if p == "":
        return True
    if not p.startswith("/"):
        return False
    return re.search(r"~(?![01])", p) is None


# ------------------------------------------------------------------------------ envelope checks

def check_envelope(review, resp):
    if not isinstance(review, dict):
        fail("review is not a JSON object")
    rv = review.get("apiVersion")
    if rv not in ADMISSION_VERSIONS:
        fail("review apiVersion %r is not one the apiserver sends" % (rv,))
    req = review.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str):
        fail("review has no request.uid")
    if not isinstance(resp, dict):
        fail("response is not a JSON object")
    if resp.get("apiVersion") != rv:
        fail("response apiVersion %r != review apiVersion %r" % (resp.get("apiVersion"), rv))
    if resp.get("kind") != "AdmissionReview":
        fail("response kind %r != 'AdmissionReview'" % (resp.get("kind"),))
    r = resp.get("response")
    if not isinstance(r, dict):
        fail("response.response missing or not an object")
    if "uid" not in r:
        fail("response.uid missing")
    if r["uid"] != req["uid"]:
        fail("response.uid %r != request.uid %r" % (r["uid"], req["uid"]))
    if "allowed" not in r:
        fail("response.allowed missing")
    if not isinstance(r["allowed"], bool):
        fail("response.allowed is %s, not a bool" % type(r["allowed"]).__name__)
    has_patch, has_type = "patch" in r and r["patch"] is not None, "patchType" in r and r["patchType"] is not None
    if has_patch != has_type:
        fail("patch and patchType must both be present or both absent (patch %s, patchType %s)"
             % ("present" if has_patch else "absent", "present" if has_type else "absent"))
    if has_type and r["patchType"] != "JSONPatch":
        fail("patchType %r != 'JSONPatch'" % (r["patchType"],))
    if has_patch and not r["allowed"]:
        fail("patch on a denied response (allowed: false)")
    if "status" in r and r["status"] is not None and not isinstance(r["status"], dict):
        fail("response.status is not an object")
    if "warnings" in r and r["warnings"] is not None:
        w = r["warnings"]
        if not isinstance(w, list) or not all(isinstance(x, str) for x in w):
            fail("response.warnings is not a list of strings")
        total = 0
        for i, x in enumerate(w):
            if len(x) > MAX_WARNING_CHARS:
                fail("warning %d is %d characters (max %d)" % (i, len(x), MAX_WARNING_CHARS))
            total += len(x.encode("utf-8"))
        if total > MAX_WARNINGS_BYTES:
            fail("warnings total %d bytes (max %d)" % (total, MAX_WARNINGS_BYTES))
    if "auditAnnotations" in r and r["auditAnnotations"] is not None:
        a = r["auditAnnotations"]
        if not isinstance(a, dict) or not all(isinstance(v, str) for v in a.values()):
            fail("response.auditAnnotations is not a map of string to string")
    ops = None
    if has_patch:
        p = r["patch"]
        if not isinstance(p, str):
            fail("patch is not a base64 string")
        try:
            raw = base64.b64decode(p, validate=True)
        except (binascii.Error, ValueError) as e:
            fail("patch is not valid base64: %s" % e)
        try:
            ops = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            fail("patch does not decode to JSON: %s" % e)
        if not isinstance(ops, list):
            fail("patch is JSON %s, not an array of operations" % type(ops).__name__)
        for i, op in enumerate(ops):
            if not isinstance(op, dict):
                fail("patch op %d is not an object" % i)
            if op.get("op") not in OPS:
                fail("patch op %d: bad op %r" % (i, op.get("op")))
            if "path" not in op or not valid_pointer(op["path"]):
                fail("patch op %d: missing or malformed path %r" % (i, op.get("path")))
            if op["op"] in ("add", "replace", "test") and "value" not in op:
                fail("patch op %d (%s %s): no value" % (i, op["op"], op["path"]))
            if op["op"] in ("move", "copy") and not valid_pointer(op.get("from")):
                fail("patch op %d (%s %s): missing or malformed from" % (i, op["op"], op["path"]))
    return req, r, ops


# ------------------------------------------------------------------------------- object checks

def is_extended(name):
    # k8s IsExtendedResourceName: domain-prefixed, not kubernetes.io, not quota "requests." names
    if "/" not in name:
        return False
    if name.startswith("requests."):
        return False
    dom = name.split("/", 1)[0]
    return not (dom == "kubernetes.io" or dom.endswith(".kubernetes.io"))


def string_map(v, where, errs):
    if v is None:
        return
    if not isinstance(v, dict):
        errs.add("%s is %s, not a map" % (where, type(v).__name__))
        return
    for k, x in v.items():
        if not isinstance(x, str):
            errs.add("%s[%s] is %s, not a string" % (where, k, type(x).__name__))


def check_container(c, where, errs):
    if not isinstance(c, dict):
        errs.add("%s is not an object" % where)
        return
    if not isinstance(c.get("name"), str) or not c.get("name"):
        errs.add("%s.name missing or not a string" % where)
    if "image" not in c or not isinstance(c["image"], str):
        errs.add("%s.image missing or not a string" % where)
    res = c.get("resources")
    if res is None:
        return
    if not isinstance(res, dict):
        errs.add("%s.resources is not an object" % where)
        return
    parsed = {}
    for sect in ("limits", "requests"):
        m = res.get(sect)
        if m is None:
            continue
        if not isinstance(m, dict):
            errs.add("%s.resources.%s is not a map" % (where, sect))
            continue
        parsed[sect] = m
        for k, q in m.items():
            w = "%s.resources.%s[%s]" % (where, sect, k)
            if not isinstance(q, str):
                errs.add("%s is %s, not a quantity string" % (w, type(q).__name__))
            elif not QUANTITY_RE.match(q):
                errs.add("%s = %r is not a Kubernetes quantity" % (w, q))
            elif quantity_value(q) < 0:
                errs.add("%s = %r is negative" % (w, q))
            elif is_extended(k) and quantity_value(q) != quantity_value(q).to_integral_value():
                errs.add("%s = %r: extended resources must be whole numbers" % (w, q))
    lim, req = parsed.get("limits", {}), parsed.get("requests", {})
    for k, q in req.items():
        if not is_extended(k) or not isinstance(q, str) or not QUANTITY_RE.match(q):
            continue
        if k not in lim:
            errs.add("%s.resources.requests[%s] without a limit (not allowed for extended resources)" % (where, k))
        elif isinstance(lim[k], str) and QUANTITY_RE.match(lim[k]) and quantity_value(lim[k]) != quantity_value(q):
            errs.add("%s.resources: requests[%s]=%r != limits %r (must be equal for extended resources)"
                     % (where, k, q, lim[k]))
    if "claims" in res and not isinstance(res["claims"], list):
        errs.add("%s.resources.claims is not a list" % where)


SUFFIX = {"": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity_value(q):
    """Exact value of a quantity string that matched QUANTITY_RE."""
    m = re.match(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$", q)
    num, suf = Decimal(m.group(1)), m.group(2)
    if suf[:1] in ("e", "E"):
        return num * (Decimal(10) ** int(suf[1:]))
    return num * SUFFIX[suf]


def check_pod_spec(spec, where, errs):
    if not isinstance(spec, dict):
        errs.add("%s is not an object" % where)
        return
    cs = spec.get("containers")
    if not isinstance(cs, list) or not cs:
        errs.add("%s.containers is not a non-empty list" % where)
    else:
        for i, c in enumerate(cs):
            check_container(c, "%s.containers[%d]" % (where, i), errs)
    for key in ("initContainers", "ephemeralContainers"):
        if key in spec and spec[key] is not None:
            if not isinstance(spec[key], list):
                errs.add("%s.%s is not a list" % (where, key))
            else:
                for i, c in enumerate(spec[key]):
                    check_container(c, "%s.%s[%d]" % (where, key, i), errs)
    string_map(spec.get("nodeSelector"), where + ".nodeSelector", errs)
    t = spec.get("tolerations")
    if t is not None:
        if not isinstance(t, list) or not all(isinstance(x, dict) for x in t):
            errs.add("%s.tolerations is not a list of objects" % where)
        else:
            for i, x in enumerate(t):
                for k in ("key", "operator", "value", "effect"):
                    if k in x and not isinstance(x[k], str):
                        errs.add("%s.tolerations[%d].%s is not a string" % (where, i, k))
                if "tolerationSeconds" in x and (not isinstance(x["tolerationSeconds"], int)
                                                 or isinstance(x["tolerationSeconds"], bool)):
                    errs.add("%s.tolerations[%d].tolerationSeconds is not an integer" % (where, i))
    a = spec.get("affinity")
    if a is not None:
        if not isinstance(a, dict):
            errs.add("%s.affinity is not an object" % where)
        else:
            na = a.get("nodeAffinity")
            if na is not None and not isinstance(na, dict):
                errs.add("%s.affinity.nodeAffinity is not an object" % where)
            elif na:
                req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
                if req is not None and (not isinstance(req, dict)
                                        or not isinstance(req.get("nodeSelectorTerms"), list)):
                    errs.add("%s.affinity.nodeAffinity.required...: nodeSelectorTerms is not a list" % where)
                pref = na.get("preferredDuringSchedulingIgnoredDuringExecution")
                if pref is not None:
                    if not isinstance(pref, list):
                        errs.add("%s.affinity.nodeAffinity.preferred... is not a list" % where)
                    else:
                        for i, p in enumerate(pref):
                            wgt = p.get("weight") if isinstance(p, dict) else None
                            if (not isinstance(wgt, int) or isinstance(wgt, bool) or not 1 <= wgt <= 100
                                    or not isinstance(p.get("preference"), dict)):
                                errs.add("%s.affinity.nodeAffinity.preferred[%d] needs weight 1..100 and "
                                         "a preference object" % (where, i))
    if "runtimeClassName" in spec and spec["runtimeClassName"] is not None \
            and not isinstance(spec["runtimeClassName"], str):
        errs.add("%s.runtimeClassName is not a string" % where)
    if "schedulerName" in spec and not isinstance(spec["schedulerName"], str):
        errs.add("%s.schedulerName is not a string" % where)


def object_errors(obj):
    errs = set()
    if not isinstance(obj, dict):
        errs.add("object is %s, not a JSON object" % type(obj).__name__)
        return errs
    md = obj.get("metadata")
    if md is not None:
        if not isinstance(md, dict):
            errs.add("metadata is not an object")
        else:
            string_map(md.get("labels"), "metadata.labels", errs)
            string_map(md.get("annotations"), "metadata.annotations", errs)
    path = POD_SPEC_PATHS.get(obj.get("kind"))
    if path:
        node, where = obj, ""
        for i, k in enumerate(path):
            if not isinstance(node, dict) or k not in node:
                errs.add("%s missing" % ".".join(path[:i + 1]))
                node = None
                break
            if k == "spec" and i == len(path) - 1 and len(path) > 1:
                tmd = node.get("metadata")  # the template's metadata
                if tmd is not None:
                    if not isinstance(tmd, dict):
                        errs.add("%s.metadata is not an object" % where)
                    else:
                        string_map(tmd.get("labels"), where + ".metadata.labels", errs)
                        string_map(tmd.get("annotations"), where + ".metadata.annotations", errs)
            node = node[k]
            where = (where + "." if where else "") + k
        if node is not None:
            check_pod_spec(node, where, errs)
    return errs


def check_object(orig, patched):
    if not isinstance(patched, dict):
        fail("patched object is %s, not a JSON object" % type(patched).__name__)
    if isinstance(orig, dict):
        for k in ("kind", "apiVersion"):
            if k in orig and patched.get(k) != orig[k]:
                fail("patch changed %s from %r to %r" % (k, orig[k], patched.get(k)))
        omd = orig.get("metadata") if isinstance(orig.get("metadata"), dict) else {}
        pmd = patched.get("metadata") if isinstance(patched.get("metadata"), dict) else {}
        for k in ("name", "namespace", "generateName"):
            if omd.get(k) != pmd.get(k):
                fail("patch changed metadata.%s from %r to %r" % (k, omd.get(k), pmd.get(k)))
    new = object_errors(patched) - object_errors(orig)
    if new:
        fail("patched object does not decode as %s: %s" % (
            patched.get("kind", "its kind"), "; ".join(sorted(new))))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("review")
    ap.add_argument("response")
    ap.add_argument("--print-patched", action="store_true")
    args = ap.parse_args(argv)
    try:
        review = load(args.review, "review")
        resp = load(args.response, "response")
        req, r, ops = check_envelope(review, resp)
        obj = req.get("object")
        patched = obj
        if ops is not None:
            if not isinstance(obj, dict):
                fail("patch given but request.object is %s" % ("null" if obj is None else type(obj).__name__))
            try:
                patched = jsonpatch.JsonPatch(ops).apply(copy.deepcopy(obj), in_place=False)
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError,
                    KeyError, IndexError, ValueError) as e:
                fail("patch does not apply to request.object: %s: %s" % (type(e).__name__, e))
            check_object(obj, patched)
    except Fail as e:
        msg = str(e).replace("\n", " ")
        if len(msg) > 600:
            msg = msg[:600] + "..."
        sys.stderr.write("check_patch: FAIL: %s\n" % msg)
        return 1
    if args.print_patched:
        json.dump(patched, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
