#!/usr/bin/python3
"""End-to-end test of `gpuadmit report`, the binary as a user runs it.

Usage: report_test.py --gpuadmit PATH --fake-api PATH --source-dir REPO_ROOT

Hermetic: the cluster is put together from the repository's recorded fixtures, in a temporary
directory:
  - nodes: tests/fixtures/nodes/tesla-t4-x2-gpu-2-kubectl-edit.yaml (qa-mig-worker-gpu-1, two
    Tesla T4), the same Node renamed qa-mig-worker-gpu-2, and
    a100-sxm4-40gb-mig-mixed-2x1g.5gb-1x2g.10gb-kubectl-edit.yaml (qa-mig-worker-gpu-a100:
    2 x 1g.5gb + 1 x 2g.10gb = 4/7 of a GPU);
  - pods: tests/fixtures/pods/pod-runai-reservation-nvidia-gpu-1.yaml (one nvidia.com/gpu)
    bound to qa-mig-worker-gpu-1, a copy of it bound to qa-mig-worker-gpu-2,
    pod-runai-mig-1g.5gb-running.yaml (cpu only) on the A100, and the dcgm-exporter pod the
    T4 exposition names (nvidia-dcgm-exporter-s228n, a DaemonSet pod, no GPU) on
    qa-mig-worker-gpu-1, so that its host label is renamed to that node;
  - metrics: tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom (both GPUs at 0%)
    three times, and once with GPU 0 at 100%, as the third reading.
Worked out by hand (docs/report.md):
  - 3 GPU nodes, 2 + 2 + 4/7 = 4.57 GPUs, 2 allocated; the A100 is 0% allocated (underused by
    allocation), each T4 node 1/2 = 50% (not below 50%); with metrics qa-mig-worker-gpu-1
    measures (25 + 0) / 2 = 12.5% (underused by utilisation);
  - packing: the two one-GPU pods fit on qa-mig-worker-gpu-1, the first node by name among the
    two equally full: the copy moves there and qa-mig-worker-gpu-2's 2 GPUs are freed;
  - time-slicing: GPU 0 reads 0, 0, 100, 0 (mean 25, max 100: 75% bursty) -> 4 replicas;
    GPU 1 reads 0 four times (0% bursty, mean 0) -> 2;
  - MIG pressure from a gpuadmit scrape: 2g.10gb fell back to 1g.5gb 5 times, 100% of the
    fallbacks; 1 of 1 2g.10gb free now; 2 exhausted.
Cases: text, JSON, the same report over the fake API server (--kubeconfig), bad input (usage
errors exit 2, files that do not load exit 3, each with a message that says what), --help.
Prints `ok - NAME` / `not ok - NAME: REASON` per check, then `N passed, M failed`.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

import yaml

from checks import check, summary

T4, T4_COPY, A100 = "qa-mig-worker-gpu-1", "qa-mig-worker-gpu-2", "qa-mig-worker-gpu-a100"


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def build_inputs(src, tmp):
    fx = os.path.join(src, "tests", "fixtures")
    t4 = load_yaml(os.path.join(fx, "nodes", "tesla-t4-x2-gpu-2-kubectl-edit.yaml"))
    t4_copy = copy.deepcopy(t4)
    t4_copy["metadata"]["name"] = T4_COPY
    t4_copy["metadata"]["labels"]["kubernetes.io/hostname"] = T4_COPY
    a100 = load_yaml(os.path.join(fx, "nodes",
                                  "a100-sxm4-40gb-mig-mixed-2x1g.5gb-1x2g.10gb-kubectl-edit.yaml"))
    reservation = load_yaml(os.path.join(fx, "pods", "pod-runai-reservation-nvidia-gpu-1.yaml"))
    reservation["spec"]["nodeName"] = T4
    moved = copy.deepcopy(reservation)
    moved["metadata"]["name"] = "runai-reservation-gpu-qa-mig-worker-gpu-2-abcde"
    moved["spec"]["nodeName"] = T4_COPY
    mig_pod = load_yaml(os.path.join(fx, "pods", "pod-runai-mig-1g.5gb-running.yaml"))
    exporter = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "nvidia-dcgm-exporter-s228n", "namespace": "gpu-operator",
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                  "name": "nvidia-dcgm-exporter"}]},
                "spec": {"nodeName": T4, "containers": [{"name": "exporter"}]},
                "status": {"phase": "Running"}}
    cluster = {"apiVersion": "v1", "kind": "List",
               "items": [t4, t4_copy, a100, reservation, moved, mig_pod, exporter]}
    paths = {"cluster": os.path.join(tmp, "cluster.json")}
    with open(paths["cluster"], "w", encoding="utf-8") as f:
        json.dump(cluster, f, default=str)
    prom = os.path.join(fx, "dcgm", "tesla-t4-x2-one-workload-pod-labels.prom")
    with open(prom, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    busy = "".join(l.rsplit(" ", 1)[0] + " 100\n"
                   if l.startswith("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"") else l for l in lines)
    paths["busy"] = os.path.join(tmp, "gpu0-busy.prom")
    with open(paths["busy"], "w", encoding="utf-8") as f:
        f.write(busy)
    paths["prom"] = prom
    paths["scrape"] = os.path.join(tmp, "gpuadmit-metrics.txt")
    with open(paths["scrape"], "w", encoding="utf-8") as f:
        f.write('# TYPE gpuadmit_mig_fallbacks_total counter\n'
                'gpuadmit_mig_fallbacks_total{from_profile="2g.10gb",to_profile="1g.5gb"} 5\n'
                'gpuadmit_decisions_total{stage="mig_fallback",outcome="fallback"} 5\n'
                'gpuadmit_decisions_total{stage="mig_fallback",outcome="exhausted"} 2\n')
    return paths


def report(args, *extra):
    return subprocess.run([args.gpuadmit, "report", *extra], capture_output=True, text=True,
                          timeout=60)


def metric_flags(p):
    return ["--dcgm-file", p["prom"], "--dcgm-file", p["prom"], "--dcgm-file", p["busy"],
            "--dcgm-file", p["prom"], "--gpuadmit-metrics", p["scrape"]]


def case_text(args, p):
    plain = report(args, "--cluster", p["cluster"])
    if not check("text: exit 0", plain.returncode == 0, plain.stderr):
        return
    lines = plain.stdout.splitlines()
    check("text: seed 002's summary line",
          lines[0] == "Consolidation opportunities found: underutilizedNodes=1, "
                      "potentialSavings=2 GPUs", lines[:1])
    check("text: the A100 is underused by allocation",
          "Recommendation: Node %s is underutilized (0.0%% used, 0/0.57 GPUs allocated)" % A100
          in lines, lines)
    check("text: the copy moves to the first T4 node",
          "Move: pod runai-reservation/runai-reservation-gpu-qa-mig-worker-gpu-2-abcde from "
          "%s to %s (1 GPUs)" % (T4_COPY, T4) in lines, lines)
    check("text: the second T4 node is freed",
          "Freed: node %s holds no GPU pod after repacking" % T4_COPY in lines, lines)
    check("text: sections without input say so",
          lines[-2:] == ["MIG layout pressure: no gpuadmit counters given (--gpuadmit-metrics)",
                         "Time-slicing: no GPU metrics given (--dcgm-file or --prometheus)"],
          lines[-2:])

    full = report(args, "--cluster", p["cluster"], *metric_flags(p))
    lines = full.stdout.splitlines()
    check("text+metrics: exit 0", full.returncode == 0, full.stderr)
    check("text+metrics: two underused nodes", lines[:1] == [
        "Consolidation opportunities found: underutilizedNodes=2, potentialSavings=2 GPUs"], lines)
    check("text+metrics: the T4 node is underused by measured utilisation",
          "Recommendation: Node %s is underutilized (50.0%% used, 1/2 GPUs allocated, 12.5%% "
          "measured utilisation)" % T4 in lines, lines)
    check("text+metrics: MIG pressure line",
          "MIG profile 2g.10gb ran out 5 times while a smaller profile was free (100.0% of "
          "fallbacks; given 1g.5gb 5); 1/1 free now: give the mig-parted layout more 2g.10gb "
          "instances" in lines, lines)
    check("text+metrics: GPU 0 bursty at 25% -> 4 replicas",
          "Time-slicing: %s GPU 0 (Tesla T4): 25.0%% mean utilisation over 4 points, 75.0%% "
          "bursty -> 4 replicas (< 40%% and > 50%% bursty; now 1)" % T4 in lines, lines)
    check("text+metrics: GPU 1 idle -> 2 replicas",
          "Time-slicing: %s GPU 1 (Tesla T4): 0.0%% mean utilisation over 4 points, 0.0%% "
          "bursty -> 2 replicas (<= 60%%; now 1)" % T4 in lines, lines)


def case_json(args, p):
    out = report(args, "--cluster", p["cluster"], *metric_flags(p), "-o", "json")
    if not check("json: exit 0", out.returncode == 0, out.stderr):
        return None
    doc = json.loads(out.stdout)
    c = doc["consolidation"]
    check("json: consolidation numbers",
          (c["gpuNodes"], c["capacityGpus"], c["allocatedGpus"], c["potentialSavingsGpus"],
           c["nodesInUse"], c["nodesInUseAfter"], c["podsPacked"], c["podsPinned"],
           c["freedNodes"]) == (3, 4.57, 2.0, 2.0, 2, 1, 2, 0, [T4_COPY]), c)
    check("json: underused nodes",
          [(u["node"], u["byAllocation"], u["byUtilization"], u["utilizationPercent"])
           for u in c["underused"]] == [(T4, False, True, 12.5), (A100, True, False, None)],
          c["underused"])
    gpus = doc["timeSlicing"]["gpus"]
    check("json: time-slicing per GPU",
          [(g["node"], g["gpu"], g["points"], g["meanUtilizationPercent"],
            g["burstinessPercent"], g["recommendedReplicas"]) for g in gpus] ==
          [(T4, 0, 4, 25.0, 75.0, 4), (T4, 1, 4, 0.0, 0.0, 2)], gpus)
    check("json: the T4 UUID from the exposition",
          gpus[0]["uuid"] == "GPU-7a2e92f2-be71-d37e-a744-541600ffc722", gpus[0])
    mig = doc["migPressure"]
    check("json: MIG pressure",
          mig == {"exhaustedTotal": 2, "profiles": [
              {"profile": "2g.10gb", "fallbacks": 5, "sharePercent": 100.0,
               "given": [{"profile": "1g.5gb", "count": 5}], "exhausted": None,
               "allocatableNow": 1, "freeNow": 1}]}, mig)
    check("json: thresholds", doc["thresholds"] == {"underusedAllocationPercent": 50.0,
                                                     "underusedUtilizationPercent": 30.0},
          doc["thresholds"])
    tight = json.loads(report(args, "--cluster", p["cluster"], "-o", "json",
                              "--underused-allocation", "60").stdout)
    check("json: --underused-allocation 60 makes both T4 nodes underused",
          [u["node"] for u in tight["consolidation"]["underused"]] == [T4, T4_COPY, A100],
          tight["consolidation"]["underused"])
    return doc


def case_live(args, p, tmp):
    kubeconfig = os.path.join(tmp, "kubeconfig")
    api = subprocess.Popen([args.fake_api, "--cluster", p["cluster"], "--token", "report",
                            "--kubeconfig", kubeconfig], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = api.stdout.readline()
        if not check("live: fake API ready", line.startswith("ready "), line):
            return
        from_file = report(args, "--cluster", p["cluster"], "-o", "json")
        live = report(args, "--kubeconfig", kubeconfig, "-o", "json")
        check("live: exit 0", live.returncode == 0, live.stderr)
        check("live: the same report as from the file",
              live.stdout == from_file.stdout, live.stdout[:400])
    finally:
        api.terminate()
        api.wait(timeout=10)


def case_errors(args, p, tmp):
    missing = os.path.join(tmp, "missing.json")
    no_items = os.path.join(tmp, "no-items.json")
    with open(no_items, "w", encoding="utf-8") as f:
        f.write('{"kind": "List"}')
    usage = [
        (["--cluster", p["cluster"], "-o", "yaml"], "-o must be text or json"),
        (["--cluster", p["cluster"], "--kubeconfig", "k"], "alternatives"),
        (["--cluster", p["cluster"], "--underused-allocation", "150"],
         "--underused-allocation must be a percentage from 0 to 100, not \"150\""),
        (["--cluster", p["cluster"], "--underused-utilization", "x"],
         "--underused-utilization must be a percentage"),
        (["--cluster", p["cluster"], "--samples", "3"], "--samples and --interval need --prometheus"),
        (["--cluster", p["cluster"], "--dcgm-file", p["prom"], "--prometheus", "http://x"],
         "alternatives"),
        (["--cluster", p["cluster"], "--bogus"], "bogus"),
    ]
    for flags, says in usage:
        out = report(args, *flags)
        check("usage: %s exits 2 saying what" % " ".join(flags[2:]),
              out.returncode == 2 and says in out.stderr, (out.returncode, out.stderr))
    config = [
        (["--cluster", missing], missing),
        (["--cluster", no_items], no_items + ": the cluster list has no \"items\" array"),
        (["--cluster", p["cluster"], "--dcgm-file", missing], missing),
        (["--cluster", p["cluster"], "--gpuadmit-metrics", missing], missing),
    ]
    for flags, says in config:
        out = report(args, *flags)
        check("config: %s exits 3 naming it" % " ".join(flags),
              out.returncode == 3 and says in out.stderr, (out.returncode, out.stderr))
    helped = subprocess.run([args.gpuadmit, "report", "--help"], capture_output=True, text=True)
    check("--help: exit 0 with report's usage",
          helped.returncode == 0 and "gpuadmit report  [--cluster FILE" in helped.stdout
          and "--underused-utilization 30" in helped.stdout, helped.stdout[-600:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpuadmit", required=True)
    parser.add_argument("--fake-api", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        p = build_inputs(args.source_dir, tmp)
        case_text(args, p)
        case_json(args, p)
        case_live(args, p, tmp)
        case_errors(args, p, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
