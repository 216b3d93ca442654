#!/usr/bin/env python3
"""The build enforces the folder arrows of docs/architecture.md.

Each library folder of core/ and webhook/ is compiled with an include path that holds only the
folders it declares (cmake/library.cmake). This test takes, from build/compile_commands.json, the
command line of one file of each folder and preprocesses a probe that includes every header of
every folder with it. A probe must succeed exactly where docs/architecture.md's table "What each
folder may include" says the folder may include the other one, and must fail with "No such
file or directory" everywhere else: the build and the document say the same, and an include
that runs the wrong way does not compile.

Usage: layering_test.py --build-dir build --source-dir .
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

TABLE_TITLE = "## What each folder may include"


def read_table(path):
    """{folder: set of folders it may include (itself excluded)} from the architecture page."""
    text = open(path, encoding="utf-8").read()
    start = text.find(TABLE_TITLE)
    if start < 0:
        sys.exit(f"{path}: no section '{TABLE_TITLE}'")
    allowed = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`")
        allowed[folder] = set(re.findall(r"`([^`]+)`", cells[1]))
    return allowed


def closure(allowed):
    """The table lists direct arrows; what a folder may include is everything they reach."""
    out = {}
    for folder in allowed:
        seen, todo = set(), list(allowed[folder])
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            if f not in allowed:
                sys.exit(f"the table names {f}, which has no row of its own")
            todo.extend(allowed[f])
        out[folder] = seen
    return out


def folders_of(source_dir):
    """Every library folder: core/X and webhook/X, plus each header at core/'s root (core/result.h,
    core/decision_point.h), a library of its own."""
    found = {f"core/{h}": [f"core/{h}"] for h in sorted(os.listdir(os.path.join(source_dir, "core")))
             if h.endswith(".h")}
    for top in ("core", "webhook"):
        for name in sorted(os.listdir(os.path.join(source_dir, top))):
            path = os.path.join(source_dir, top, name)
            if os.path.isdir(path):
                headers = sorted(f"{top}/{name}/{h}" for h in os.listdir(path) if h.endswith(".h"))
                found[f"{top}/{name}"] = headers
    return found


def compile_flags(build_dir, source_dir):
    """{folder: (directory, argv without -c/-o/the file)} from one translation unit each."""
    entries = json.load(open(os.path.join(build_dir, "compile_commands.json")))
    flags = {}
    for e in entries:
        rel = os.path.relpath(e["file"], source_dir)
        folder = os.path.dirname(rel)
        if folder in flags or not re.fullmatch(r"(core|webhook)/[a-z_]+", folder):
            continue
        argv = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        kept, skip = [], False
        for a in argv:
            if skip:
                skip = False
            elif a in ("-o", "-c"):
                skip = True
            elif a == e["file"] or a.endswith(".cc"):
                continue
            else:
                kept.append(a)
        flags[folder] = (e["directory"], kept)
    return flags


def probe(directory, argv, headers, scratch):
    """(ok, first error line) for preprocessing a file that includes `headers`."""
    fd, path = tempfile.mkstemp(suffix=".cc", dir=scratch)
    with os.fdopen(fd, "w") as f:
        f.writelines(f'#include "{h}"\n' for h in headers)
    run = subprocess.run(argv + ["-E", "-o", os.devnull, path], cwd=directory,
                         capture_output=True, text=True)
    errors = [l for l in run.stderr.splitlines() if "error" in l]
    return run.returncode == 0, (errors[0] if errors else run.stderr.strip()[:200])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    source_dir = os.path.realpath(args.source_dir)
    table = read_table(os.path.join(source_dir, "docs/architecture.md"))
    may = closure(table)
    folders = folders_of(source_dir)
    flags = compile_flags(args.build_dir, source_dir)

    failures = []
    for folder in folders:
        if folder not in table:
            failures.append(f"{folder}: a library folder with no row in docs/architecture.md")
    for folder in table:
        if folder not in folders:
            failures.append(f"{folder}: in docs/architecture.md but not a folder of the tree")
    if failures:
        print("\n".join(failures))
        return 1

    cases = [(f, g) for f in sorted(flags) for g in sorted(folders) if g != f]
    with tempfile.TemporaryDirectory() as scratch, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = pool.map(lambda c: probe(*flags[c[0]], folders[c[1]], scratch), cases)
        checked = 0
        for (f, g), (ok, error) in zip(cases, results):
            checked += 1
            expected = g in may[f]
            if ok and not expected:
                failures.append(f"{f} can include {g}, which docs/architecture.md does not allow")
            elif not ok and expected:
                failures.append(f"{f} cannot include {g}, which it may: {error}")
            elif not ok and "No such file or directory" not in error:
                failures.append(f"{f} including {g} failed for another reason: {error}")
    # The headers at core/'s root are header-only libraries: included, never compiled alone.
    missing = sorted(f for f in set(folders) - set(flags) if not f.endswith(".h"))
    for folder in missing:
        failures.append(f"{folder}: no translation unit in compile_commands.json")
    print(f"{checked} folder pairs probed over {len(flags)} library folders")
    for line in failures:
        print("FAIL:", line)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
