#!/usr/bin/python3
"""gpuadmit's live inventory against the real kube-apiserver at scale: N KWOK GPU nodes and M
pods, then gpuadmit started on them.

    bench/cluster/inventory_scale.py --gpuadmit build/gpuadmit [--nodes 1000] [--pods 20000]
                                     [--churn-seconds 20] [--churn-rate 50] [-o FILE.json]

Reports, in one run: how long `kubectl get nodes,pods -A -o json` of the same lists takes (the
reference), gpuadmit's time from start to its first snapshot (/readyz), its resident memory
then and at the end (VmRSS, VmHWM), and the watch lag under churn: while pods are created and
deleted at --churn-rate, probe pods bound to a node of their own are created one at a time, and
each probe's lag is the time from the apiserver's answer to the create until gpuadmit's
gpuadmit_cluster_resource_used counts it (polled every 10 ms). Every node has 8 whole GPUs; a
pod asks one GPU on 40% of them (8 per node at most) and none on the rest, bound at creation
(spec.nodeName), so the scheduler's pace is not what is measured.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(REPO, "tests/cluster"))

from control_plane import ControlPlane  # noqa: E402
from kube import create_in_parallel  # noqa: E402

PROBE_RESOURCE = "nvidia.com/mig-3g.40gb"
CLIENTS = 16


def log(message):
    print("# %s %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


def node(name, template, extra=None):
    n = json.loads(json.dumps(template))
    n["metadata"]["name"] = name
    n["metadata"]["labels"]["kubernetes.io/hostname"] = name
    for key in ("capacity", "allocatable"):
        n["status"][key].update(extra or {})
    return n


def pod(name, node_name, resources):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"bench": "scale"}},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "main", "image": "img",
                                     "resources": {"limits": resources} if resources else {}}]}}


def memory_kib(pid):
    values = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                key, value = line.split(":")
                values[key] = int(value.split()[0])
    return values


def used(metrics_port, resource):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("gpuadmit_cluster_resource_used{") and \
                    'resource="%s"' % resource in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpuadmit", required=True)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--churn-seconds", type=float, default=20)
    parser.add_argument("--churn-rate", type=float, default=50)
    parser.add_argument("-o", "--output")
    parser.add_argument("--check", action="store_true",
                        help="also check the figures against their bounds (the ctest scenario)")
    args = parser.parse_args()
    figures = {"nodes": args.nodes, "pods": args.pods}
    workdir = tempfile.mkdtemp(prefix="gpuadmit-bench-scale-")
    plane = ControlPlane(workdir, REPO, gpuadmit=os.path.abspath(args.gpuadmit), log=log)
    try:
        plane.start()
        with open(os.path.join(REPO, "tests/cluster/nodes.json")) as f:
            template = json.load(f)["items"][2]  # gpu-whole: 8 whole GPUs
        names = ["scale-%04d" % i for i in range(args.nodes)]
        nodes = [node(n, template) for n in names] + [node("probe", template,
                                                           {PROBE_RESOURCE: "100000"})]
        nodes_file = os.path.join(workdir, "nodes.json")
        with open(nodes_file, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, f)
        started = time.monotonic()
        plane.add_nodes(nodes_file)
        figures["nodes_ready_s"] = time.monotonic() - started
        api = plane.api()

        def make_pod(i):
            gpu = {"nvidia.com/gpu": "1"} if i % 5 < 2 else None
            return "/api/v1/namespaces/default/pods", pod("scale-%05d" % i,
                                                          names[i % len(names)], gpu)

        seconds, errors = create_in_parallel(api, range(args.pods), make_pod, CLIENTS)
        figures["pods_created_s"] = seconds
        figures["pod_create_errors"] = len(errors)
        log("%d pods created in %.1f s (%d errors)" % (args.pods, seconds, len(errors)))

        started = time.monotonic()
        listing = plane.kubectl("get", "nodes,pods", "-A", "-o", "json", timeout=600)
        figures["kubectl_get_json_s"] = time.monotonic() - started
        figures["kubectl_get_json_mb"] = len(listing) / 1e6
        del listing
        started = time.monotonic()
        plane.kubectl("get", "pods", "-A", "--no-headers", timeout=600)
        figures["kubectl_get_pods_table_s"] = time.monotonic() - started
        log("kubectl get nodes,pods -o json: %.1f s" % figures["kubectl_get_json_s"])

        started = time.monotonic()
        plane.start_gpuadmit(extra=["--log-level", "warn"])
        figures["gpuadmit_first_snapshot_s"] = time.monotonic() - started
        pid = plane.processes["gpuadmit"].pid
        figures["gpuadmit_memory_at_start_kib"] = memory_kib(pid)
        log("gpuadmit ready in %.1f s, %s" % (figures["gpuadmit_first_snapshot_s"],
                                              figures["gpuadmit_memory_at_start_kib"]))
        metrics_port = plane.gpuadmit_ports["gpuadmit"][1]

        # Churn: pods created and deleted at the rate, while probes measure the watch's lag.
        stop = time.monotonic() + args.churn_seconds
        churned = []

        def churn():
            client = api.clone()
            i = 0
            while time.monotonic() < stop:
                due = time.monotonic() + 1.0 / args.churn_rate
                name = "churn-%05d" % i
                client.request("POST", "/api/v1/namespaces/default/pods",
                               pod(name, names[i % len(names)], {"nvidia.com/gpu": "1"}))
                if i >= 10:
                    client.request("DELETE", "/api/v1/namespaces/default/pods/churn-%05d"
                                   % (i - 10))
                churned.append(i)
                i += 1
                time.sleep(max(0.0, due - time.monotonic()))

        churner = threading.Thread(target=churn)
        churner.start()
        lags = []
        probe = api.clone()
        k = 0
        while time.monotonic() < stop:
            k += 1
            status, _ = probe.request("POST", "/api/v1/namespaces/default/pods",
                                      pod("probe-%04d" % k, "probe", {PROBE_RESOURCE: "1"}))
            answered = time.monotonic()
            deadline = answered + 30
            while used(metrics_port, PROBE_RESOURCE) < k and time.monotonic() < deadline:
                time.sleep(0.01)
            lags.append(time.monotonic() - answered)
            time.sleep(0.2)
        churner.join()
        lags.sort()
        figures["churn_pods_per_s"] = len(churned) / args.churn_seconds * 2  # creates + deletes
        figures["watch_lag_probes"] = len(lags)
        figures["watch_lag_p50_ms"] = lags[len(lags) // 2] * 1000 if lags else None
        figures["watch_lag_max_ms"] = lags[-1] * 1000 if lags else None
        figures["gpuadmit_memory_at_end_kib"] = memory_kib(pid)
        log("watch lag p50 %.0f ms, max %.0f ms over %d probes" % (
            figures["watch_lag_p50_ms"], figures["watch_lag_max_ms"], len(lags)))
    finally:
        for line in plane.failures():
            print(line, file=sys.stderr)
        plane.stop()
        subprocess.run(["rm", "-rf", workdir])
    print(json.dumps(figures, indent=1))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(figures, f, indent=1)
    return check_figures(figures) if args.check else 0


def check_figures(figures):
    """The bounds the scenario holds gpuadmit to: a first snapshot faster than kubectl lists the
    same objects, no probe waiting a second for the watch, and memory within 200 MB."""
    sys.path.insert(0, os.path.join(REPO, "tests/e2e"))
    from checks import check, summary
    check("every pod was created", figures.get("pod_create_errors") == 0)
    check("first snapshot %.1f s, before `kubectl get nodes,pods -o json` lists them (%.1f s)"
          % (figures.get("gpuadmit_first_snapshot_s", -1), figures.get("kubectl_get_json_s", -1)),
          figures.get("gpuadmit_first_snapshot_s", 1e9) < figures.get("kubectl_get_json_s", 0))
    check("watch lag under churn: the slowest of %d probes %.0f ms, under 1 s"
          % (figures.get("watch_lag_probes", 0), figures.get("watch_lag_max_ms") or -1),
          figures.get("watch_lag_probes", 0) > 0 and (figures.get("watch_lag_max_ms") or 1e9) < 1000)
    peak = figures.get("gpuadmit_memory_at_end_kib", {}).get("VmHWM", 1e9)
    check("resident memory at its peak %.0f MB, under 200 MB" % (peak / 1024), peak < 200 * 1024)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
