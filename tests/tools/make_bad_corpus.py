#!/usr/bin/python3
"""Regenerate tests/fixtures/bad/: one malformed /mutate body per file.

The base of every "valid review with one defect" case is tests/fixtures/gpu/kubectl-pod.json,
so run make_gpu_reviews.py first. tests/fixtures/bad/README.md (hand-written) says what a
strict webhook must answer for each file. The 8 MiB body is NOT stored: the HTTP test builds it.

Usage: /usr/bin/python3 tests/tools/make_bad_corpus.py [--check]
Stdlib only.
"""
import argparse
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(REPO, "tests", "fixtures")
OUT = os.path.join(FIX, "bad")
BASE = os.path.join(FIX, "gpu", "kubectl-pod.json")

DEPTH = 100_000
GPU = "nvidia.com/mig-2g.20gb"


def dumps(doc):
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def build():
    with open(BASE, encoding="utf-8") as f:
        base = json.load(f)
    uid = base["request"]["uid"]
    files = {}

    files["empty.txt"] = b""
    files["not-json.txt"] = b"this is not JSON: <AdmissionReview uid=1>\n"
    files["array.json"] = b"[1,2]\n"
    files["string.json"] = b'"x"\n'

    d = copy.deepcopy(base)
    d["apiVersion"] = "admission.k8s.io/v2"
    files["wrong-apiversion.json"] = dumps(d)

    d = copy.deepcopy(base)
    d["kind"] = "Foo"
    files["wrong-kind.json"] = dumps(d)

    files["no-request.json"] = dumps({"apiVersion": base["apiVersion"], "kind": "AdmissionReview"})
    files["request-null.json"] = dumps({"apiVersion": base["apiVersion"], "kind": "AdmissionReview",
                                        "request": None})

    d = copy.deepcopy(base)
    del d["request"]["uid"]
    files["no-uid.json"] = dumps(d)

    d = copy.deepcopy(base)
    d["request"]["uid"] = 12345
    files["uid-not-string.json"] = dumps(d)

    d = copy.deepcopy(base)
    d["request"]["object"] = "hello"
    files["object-wrong-type.json"] = dumps(d)

    d = copy.deepcopy(base)
    c0 = d["request"]["object"]["spec"]["containers"][0]
    d["request"]["object"]["spec"]["containers"] = {c0["name"]: c0}
    files["object-containers-not-array.json"] = dumps(d)

    d = copy.deepcopy(base)
    c0 = d["request"]["object"]["spec"]["containers"][0]
    weird = [("gpu-half", "500m"), ("gpu-abc", "abc"), ("gpu-number", 1), ("gpu-object", {"x": 1})]
    conts = []
    for name, q in weird:
        c = copy.deepcopy(c0)
        c["name"] = name
        c["resources"] = {"limits": {GPU: q}, "requests": {GPU: q}}
        conts.append(c)
    d["request"]["object"]["spec"]["containers"] = conts
    files["resources-weird.json"] = dumps(d)

    # metadata.name with the raw bytes FF FE (never valid in UTF-8) in the middle
    d = copy.deepcopy(base)
    d["request"]["object"]["metadata"]["name"] = "gpu-\u0000MARK\u0000-pod"
    raw = dumps(d)
    marker = json.dumps("gpu-\u0000MARK\u0000-pod").encode()
    assert raw.count(marker) == 1
    files["invalid-utf8.json"] = raw.replace(marker, b'"gpu-\xff\xfe-pod"')

    # metadata.name with the escape of a lone low surrogate: well-formed JSON text, but the
    # decoded string would not be UTF-8 (found by fuzzing, in request.uid)
    d = copy.deepcopy(base)
    d["request"]["object"]["metadata"]["name"] = "gpu-\u0000MARK\u0000-pod"
    raw = dumps(d)
    files["lone-surrogate.json"] = raw.replace(marker, b'"gpu-\\udfee-pod"')

    # 100,000 nested arrays as request.object (well-formed apart from the depth)
    head = ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s",'
            '"kind":{"group":"","version":"v1","kind":"Pod"},'
            '"resource":{"group":"","version":"v1","resource":"pods"},'
            '"name":"gpu-pod","namespace":"default","operation":"CREATE",'
            '"userInfo":{"username":"kubernetes-admin"},"dryRun":false,"object":' % uid).encode()
    files["deep-nesting.json"] = head + b"[" * DEPTH + b"]" * DEPTH + b"}}\n"
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    files = build()
    os.makedirs(OUT, exist_ok=True)
    bad = 0
    for name in sorted(files):
        path = os.path.join(OUT, name)
        try:
            with open(path, "rb") as f:
                same = f.read() == files[name]
        except FileNotFoundError:
            same = False
        if args.check:
            if not same:
                print("differs:", path)
                bad += 1
            continue
        if not same:
            with open(path, "wb") as f:
                f.write(files[name])
        print(("wrote " if not same else "unchanged ") + path + " (%d bytes)" % len(files[name]))
    if args.check:
        print("%d of %d files differ" % (bad, len(files)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
