#!/usr/bin/python3
"""Copy the shared recorded fixtures into tests/fixtures and derive the wrapped
AdmissionReviews.

  tests/fixtures/admission/*            byte-for-byte copies of <shared>/admission/*
  tests/fixtures/admission/wrapped-X.json  for each request-only-X.json:
        {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request": <file>}
  tests/fixtures/pods/*                 byte-for-byte copies of <shared>/pods/*
  tests/fixtures/SOURCES.md             <shared>/SOURCES.md + a section on derived files

Usage: /usr/bin/python3 tests/tools/import_shared_fixtures.py [--shared DIR]
       (DIR defaults to $GPUADMIT_SHARED_FIXTURES or /work/shared/fixtures)
Stdlib only.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(REPO, "tests", "fixtures")

DERIVED_SECTION_FILE = os.path.join(HERE, "SOURCES-derived.md")


def copy_dir(src, dst):
    os.makedirs(dst, exist_ok=True)
    names = sorted(n for n in os.listdir(src) if os.path.isfile(os.path.join(src, n)))
    for n in names:
        shutil.copyfile(os.path.join(src, n), os.path.join(dst, n))  # content only, mode 0644 via umask
        os.chmod(os.path.join(dst, n), 0o644)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("GPUADMIT_SHARED_FIXTURES", "/work/shared/fixtures"))
    args = ap.parse_args()
    src_adm = os.path.join(args.shared, "admission")
    dst_adm = os.path.join(FIX, "admission")
    names = copy_dir(src_adm, dst_adm)
    print("copied %d files to %s" % (len(names), dst_adm))
    for n in names:
        if n.startswith("request-only-") and n.endswith(".json"):
            with open(os.path.join(src_adm, n), "rb") as f:
                req = json.loads(f.read().decode("utf-8"))
            if not isinstance(req, dict) or "uid" not in req:
                sys.stderr.write("import_shared_fixtures: %s is not an AdmissionRequest\n" % n)
                return 1
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
            out = os.path.join(dst_adm, "wrapped-" + n[len("request-only-"):])
            with open(out, "w", encoding="utf-8") as f:
                json.dump(review, f, indent=2, ensure_ascii=False)
                f.write("\n")
            print("wrote", out)
    pods = copy_dir(os.path.join(args.shared, "pods"), os.path.join(FIX, "pods"))
    print("copied %d files to %s" % (len(pods), os.path.join(FIX, "pods")))
    with open(os.path.join(args.shared, "SOURCES.md"), encoding="utf-8") as f:
        sources = f.read()
    with open(DERIVED_SECTION_FILE, encoding="utf-8") as f:
        derived = f.read()
    if not sources.endswith("\n"):
        sources += "\n"
    with open(os.path.join(FIX, "SOURCES.md"), "w", encoding="utf-8") as f:
        f.write(sources + "\n" + derived)
    print("wrote", os.path.join(FIX, "SOURCES.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
