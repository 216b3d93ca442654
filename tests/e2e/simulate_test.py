#!/usr/bin/python3
"""End-to-end test of `gpuadmit simulate`, the binary as a user runs it.

Usage: simulate_test.py --gpuadmit PATH --source-dir REPO_ROOT

Hermetic: inputs are the repository's fixtures (tests/fixtures/simulate, tests/fixtures/alibaba),
outputs go to a temporary directory. Cases:
  1. seed 003's burst with the shipped policy: the baseline runs 12 and leaves 8 Pending, gpuadmit
     runs all 20 (12 on 2g.20gb, 8 fallen back to 1g.10gb); every documented JSON field in every
     run; the oracle's 20; the table names both runs;
  2. --svg: an SVG document with the title, both axes and one line per run;
  3. --replicas 3: separate ledgers count devices twice, one replica never does;
  4. the Alibaba trace (a sample of its rows), seeds 0-2, two strategies: three runs per name,
     a summary with median and range, the same JSON twice;
  5. --queue (issue 18): a hand-made stream on two 4-GPU nodes where a small pod would keep a
     large one waiting (tests/core/sim/replay_queue_test.cc computes it): each wait with and
     without the queue; the trace sample in its own time (--trace-times), twice the same;
  6. bad input: usage errors exit 2, files that do not load exit 3, each with a message that
     says what and where.
Prints `ok - NAME` / `not ok - NAME: REASON` per check, then `N passed, M failed`; exit 1 on
failures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from checks import check, summary

FIELDS = ["name", "arrived_pods", "placed_pods", "pending_pods", "gpu_pods_placed",
          "gpu_pods_pending", "capacity_gpus", "allocated_gpus",
          "unallocated_ratio_at_full_demand", "fallbacks", "sharing_conversions",
          "preferred_affinity_honoured_ratio", "wait_seconds_p50", "wait_seconds_p99"]
MIG2, MIG1 = "nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"



def simulate(args, *extra):
    return subprocess.run([args.gpuadmit, "simulate", *extra], capture_output=True, text=True,
                          timeout=120)


def runs_by_name(doc):
    return {r["name"]: r for r in doc["runs"]}


def case_burst(args, tmp):
    p = simulate(args, "--cluster", args.cluster, "--workload", args.burst, "--policy",
                 args.policy, "-o", "json", "--svg", os.path.join(tmp, "burst.svg"))
    if not check("burst: exit 0", p.returncode == 0, p.stderr):
        return
    runs = runs_by_name(json.loads(p.stdout))
    base, policy = runs.get("baseline"), runs.get("policy.yaml")
    if not check("burst: a baseline and a policy run", base and policy, list(runs)):
        return
    check("burst: baseline 12 run, 8 pending",
          (base["placed_pods"], base["pending_pods"]) == (12, 8), base)
    check("burst: gpuadmit runs all 20", (policy["placed_pods"], policy["pending_pods"]) == (20, 0),
          policy)
    check("burst: 12 on 2g.20gb, 8 fallen back to 1g.10gb",
          policy["placed_by_resource"] == {MIG2: 12, MIG1: 8} and policy["fallbacks"] == 8,
          policy["placed_by_resource"])
    for name, r in runs.items():
        missing = [f for f in FIELDS if f not in r]
        check("burst: %s has every documented field" % name, not missing, missing)
        check("burst: %s reports the oracle's 20" % name, r.get("oracle_placeable_pods") == 20,
              r.get("oracle_placeable_pods"))
    table = simulate(args, "--cluster", args.cluster, "--workload", args.burst, "--policy",
                     args.policy)
    lines = table.stdout.splitlines()
    check("burst: the table has a header and a line per run",
          table.returncode == 0 and len(lines) == 3 and lines[0].startswith("RUN") and
          lines[1].startswith("baseline") and lines[2].startswith("policy.yaml"), table.stdout)
    case_svg(os.path.join(tmp, "burst.svg"), ["baseline", "policy.yaml"])


def case_svg(path, names):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        check("svg: parses as XML", False, str(e))
        return
    check("svg: an svg root", root.tag.endswith("svg"), root.tag)
    text = " ".join("".join(t.itertext()) for t in root.iter() if t.tag.endswith("text"))
    check("svg: the axes are named", "arrived GPU demand" in text and "unallocated" in text, text)
    check("svg: each run is named", all(n in text for n in names), text)
    lines = [e for e in root.iter() if e.tag.endswith("polyline") or e.tag.endswith("path")]
    check("svg: one line per run at least", len(lines) >= len(names), len(lines))


def case_replicas(args):
    twice = {}
    for replicas in ("1", "3"):
        p = simulate(args, "--cluster", args.cluster, "--workload", args.burst, "--policy",
                     args.policy, "--replicas", replicas, "-o", "json")
        if not check("replicas %s: exit 0" % replicas, p.returncode == 0, p.stderr):
            return
        twice[replicas] = runs_by_name(json.loads(p.stdout))["policy.yaml"]["devices_counted_twice"]
    check("replicas: one ledger counts nothing twice", twice["1"] == 0, twice)
    check("replicas: three ledgers count devices twice", twice["3"] > 0, twice)


def case_trace(args):
    flags = ["--trace", "alibaba-openb", "--nodes", args.nodes_csv, "--pods", args.pods_csv,
             "--seed", "0-2", "--strategy", "first-fit", "--strategy", "fragmentation",
             "-o", "json"]
    first, again = simulate(args, *flags), simulate(args, *flags)
    if not check("trace: exit 0", first.returncode == 0, first.stderr):
        return
    doc = json.loads(first.stdout)
    names = [r["name"] for r in doc["runs"]]
    for name in ("baseline", "defaults/first-fit", "defaults/fragmentation"):
        check("trace: three seeds of %s" % name, names.count(name) == 3, names)
    check("trace: seeds 0, 1, 2", sorted({r["seed"] for r in doc["runs"]}) == [0, 1, 2],
          [r.get("seed") for r in doc["runs"]])
    summary = {s["name"]: s for s in doc["summary"]}
    u = summary.get("baseline", {}).get("unallocated_ratio_at_full_demand") or {}
    check("trace: the summary gives median and range",
          set(u) == {"median", "min", "max"} and 0 <= u["min"] <= u["median"] <= u["max"] <= 1, u)
    check("trace: a seed gives the same replay every time", first.stdout == again.stdout)


def queue_node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110",
                                       "nvidia.com/gpu": "4"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def queue_pod(name, gpus, at, duration):
    return {"at": at, "duration": duration, "object": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}


def case_queue(args, tmp):
    cluster, stream, policy = (os.path.join(tmp, n) for n in ("q-nodes.json", "q.jsonl",
                                                              "q-policy.yaml"))
    with open(cluster, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List",
                   "items": [queue_node("n0"), queue_node("n1")]}, f)
    with open(stream, "w") as f:
        for pod in (queue_pod("a", 4, 0, 100), queue_pod("b", 2, 1, 50),
                    queue_pod("c", 4, 2, 10), queue_pod("d", 2, 3, 100)):
            f.write(json.dumps(pod) + "\n")
    with open(policy, "w") as f:
        f.write("sharing: {enabled: false}\nplacement: {enabled: false}\n")
    p = simulate(args, "--cluster", cluster, "--workload", stream, "--policy", policy, "--queue",
                 "-o", "json")
    if not check("queue: exit 0", p.returncode == 0, p.stderr):
        return
    runs = runs_by_name(json.loads(p.stdout))
    check("queue: baseline, the policy, and the policy with its queue",
          list(runs) == ["baseline", "q-policy.yaml", "q-policy.yaml+queue"], list(runs))
    off, on = runs.get("q-policy.yaml", {}), runs.get("q-policy.yaml+queue", {})
    # Without: A, B, D at once, C when A leaves (98.05 s). With: C when B leaves (49.05 s), D
    # when C leaves (58.05 s).
    near = lambda a, b: a is not None and abs(a - b) < 1e-6
    check("queue: without it the large pod waits 98.05 s, the mean 24.55 s",
          near(off.get("wait_seconds_p99"), 98.05) and near(off.get("wait_seconds_mean"), 24.55)
          and off.get("queued_pods") == 0, off)
    check("queue: with it the longest wait is 58.05 s, the mean 26.8 s, two pods gated",
          near(on.get("wait_seconds_p99"), 58.05) and
          near(on.get("wait_seconds_mean"), 26.8) and on.get("queued_pods") == 2 and
          on.get("queue_timeouts") == 0 and on.get("placed_pods") == 4, on)
    flags = ["--trace", "alibaba-openb", "--nodes", args.nodes_csv, "--pods", args.pods_csv,
             "--trace-times", "20000", "--queue", "-o", "json"]
    first, again = simulate(args, *flags), simulate(args, *flags)
    if not check("queue: the trace in its own time exits 0", first.returncode == 0, first.stderr):
        return
    doc = json.loads(first.stdout)
    check("queue: the trace's runs carry the wait and allocation fields",
          [r["name"] for r in doc["runs"]] == ["baseline", "defaults", "defaults+queue"] and
          all(len(r["allocated_gpus_over_time"]) == 11 and r["wait_seconds_mean"] is not None
              for r in doc["runs"]), doc["runs"])
    check("queue: the trace in its own time gives the same replay every time",
          first.stdout == again.stdout)


def case_errors(args, tmp):
    bad_line = os.path.join(tmp, "bad.jsonl")
    with open(bad_line, "w") as f:
        f.write('{"at": 0, "object": {"apiVersion": "v1", "kind": "Pod", '
                '"metadata": {"name": "a"}, "spec": {}}}\n{"duration": 5}\n')
    cases = [
        ("-o yaml", ["--cluster", args.cluster, "--workload", args.burst, "-o", "yaml"], 2,
         "-o must be table or json"),
        ("--trace with --cluster", ["--trace", "alibaba-openb", "--cluster", args.cluster], 2,
         "--trace replaces --cluster"),
        ("no input", [], 3, "give --cluster FILE and --workload FILE"),
        ("an unknown trace", ["--trace", "google", "--nodes", args.nodes_csv, "--pods",
                              args.pods_csv], 3, 'trace "google" is not known'),
        ("an unknown strategy", ["--cluster", args.cluster, "--workload", args.burst,
                                 "--strategy", "random"], 3, '--strategy "random"'),
        ("a missing workload file", ["--cluster", args.cluster, "--workload",
                                     os.path.join(tmp, "absent.jsonl")], 3, "absent.jsonl"),
        ("a workload line without at", ["--cluster", args.cluster, "--workload", bad_line], 3,
         "line 2"),
        ("a negative bind delay", ["--cluster", args.cluster, "--workload", args.burst,
                                   "--bind-delay", "-1"], 2, "--bind-delay"),
    ]
    for name, flags, code, words in cases:
        p = simulate(args, *flags)
        check("errors: %s exits %d saying why" % (name, code),
              p.returncode == code and words in p.stderr and p.stdout == "",
              "rc %d, stderr %r" % (p.returncode, p.stderr))
    p = simulate(args, "--help")
    check("errors: --help exits 0 naming simulate's flags",
          p.returncode == 0 and all(f in p.stdout for f in ("--workload", "--trace", "--replicas",
                                                            "--svg", "--strategy")), p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    src = os.path.abspath(args.source_dir)
    args.policy = os.path.join(src, "manifests/examples/policy.yaml")
    args.cluster = os.path.join(src, "tests/fixtures/simulate/seed003-nodes.json")
    args.burst = os.path.join(src, "tests/fixtures/simulate/seed003-burst.jsonl")
    args.nodes_csv = os.path.join(src, "tests/fixtures/alibaba/nodes-sample.csv")
    args.pods_csv = os.path.join(src, "tests/fixtures/alibaba/pods-sample.csv")
    with tempfile.TemporaryDirectory(prefix="gpuadmit-simulate-") as tmp:
        case_burst(args, tmp)
        case_replicas(args)
        case_trace(args)
        case_queue(args, tmp)
        case_errors(args, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
