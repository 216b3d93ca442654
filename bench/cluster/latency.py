#!/usr/bin/python3
"""Admission latency as the real kube-apiserver measures it: pods created through a local control
plane (tests/cluster/) at fixed rates, with gpuadmit registered and with no webhook, alternated in
one run.

    bench/cluster/latency.py --gpuadmit build/gpuadmit [--rates 50,200,max] [--seconds 5]
                             [--rounds 2] [--nodes 150] [-o FILE.json]

For each rate and each configuration it reports the client's create latency (p50, p99, from the
moment the open-loop schedule meant to send each request, so a stalled client counts), the
throughput achieved, and for gpuadmit the apiserver's own
apiserver_admission_webhook_admission_duration_seconds: the share of calls within its first
bucket (5 ms) and the mean. `max` is the highest rate the machine sustains with no webhook,
measured first by a closed loop of 16 clients. Every pod asks one whole GPU, on N fake nodes of
8 GPUs each, and the pods of each phase are deleted before the next.
"""

import argparse
import json
import os
import queue
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(REPO, "tests/cluster"))

from control_plane import ControlPlane  # noqa: E402

NAMESPACE = "bench"
PODS = "/api/v1/namespaces/%s/pods" % NAMESPACE
HOOK = "mutate.gpuadmit.io"
METRIC = "apiserver_admission_webhook_admission_duration_seconds"
CLIENTS = 16


def log(message):
    print("# %s %s" % (time.strftime("%H:%M:%S"), message), file=sys.stderr, flush=True)


def pod(i, tag):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "%s-%05d" % (tag, i), "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def webhook_histogram(api):
    """(calls within 5 ms, calls, seconds in total) of gpuadmit's CREATE admissions so far."""
    status, text = api.request("GET", "/metrics")
    within = count = total = 0.0
    for line in text.splitlines():
        if not line.startswith(METRIC) or 'name="%s"' % HOOK not in line:
            continue
        if 'operation="CREATE"' not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith(METRIC + "_bucket") and 'le="0.005"' in name:
            within += float(value)
        elif name.startswith(METRIC + "_count"):
            count += float(value)
        elif name.startswith(METRIC + "_sum"):
            total += float(value)
    return within, count, total


def own_review_seconds(metrics_port):
    """(reviews, seconds) of gpuadmit's own gpuadmit_review_duration_seconds so far."""
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5) as r:
        text = r.read().decode()
    count = total = 0.0
    for line in text.splitlines():
        if line.startswith("gpuadmit_review_duration_seconds_count"):
            count = float(line.rsplit(" ", 1)[1])
        elif line.startswith("gpuadmit_review_duration_seconds_sum"):
            total = float(line.rsplit(" ", 1)[1])
    return count, total


def cpu_seconds(pid):
    """User + system CPU seconds the process has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(plane):
    return {name: cpu_seconds(p.pid) for name, p in plane.processes.items()}


def open_loop(api, rate, seconds, tag):
    """Creates rate x seconds pods on the open-loop schedule; (latencies, errors, wall)."""
    todo = queue.Queue()
    latencies, errors = [], []
    lock = threading.Lock()
    total = int(rate * seconds)
    start = time.monotonic() + 0.2

    def worker():
        client = api.clone()
        while True:
            item = todo.get()
            if item is None:
                return
            i, due = item
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            status, text = client.request("POST", PODS, pod(i, tag))
            took = time.monotonic() - due
            with lock:
                (latencies if status == 201 else errors).append(took if status == 201 else text)

    threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for i in range(total):
        todo.put((i, start + i / rate))
    for _ in threads:
        todo.put(None)
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return latencies, errors, wall


def closed_loop(api, seconds, tag):
    """CLIENTS clients creating pods back to back for `seconds`: pods created per second."""
    stop = time.monotonic() + seconds
    created = []
    lock = threading.Lock()

    def worker(w):
        client = api.clone()
        i = 0
        while time.monotonic() < stop:
            status, _ = client.request("POST", PODS, pod(w * 100000 + i, tag))
            i += 1
            if status == 201:
                with lock:
                    created.append(1)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(CLIENTS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(created) / (time.monotonic() - started)


def clear(api):
    api.request("DELETE", PODS)
    api.wait(lambda: not api.get(PODS, limit="1")["items"], 120, "the phase's pods to be deleted")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpuadmit", required=True)
    parser.add_argument("--rates", default="50,200,max")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=150)
    parser.add_argument("-o", "--output", help="also write the figures as JSON here")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="gpuadmit-bench-cluster-")
    plane = ControlPlane(workdir, REPO, gpuadmit=os.path.abspath(args.gpuadmit), log=log)
    results = []
    try:
        plane.start()
        with open(os.path.join(REPO, "tests/cluster/nodes.json")) as f:
            template = json.load(f)["items"][2]  # gpu-whole: 8 whole GPUs
        nodes = []
        for i in range(args.nodes):
            node = json.loads(json.dumps(template))
            node["metadata"]["name"] = "bench-%03d" % i
            node["metadata"]["labels"]["kubernetes.io/hostname"] = "bench-%03d" % i
            nodes.append(node)
        nodes_file = os.path.join(workdir, "nodes.json")
        with open(nodes_file, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, f)
        plane.add_nodes(nodes_file)
        plane.start_gpuadmit(extra=["--log-level", "warn"])
        api = plane.api()
        plane.create_namespace(NAMESPACE)
        webhook = plane.webhook_configuration(
            "https://127.0.0.1:%d/mutate" % plane.gpuadmit_ports["gpuadmit"][0])
        hook_path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpuadmit"

        def configure(with_gpuadmit):
            if with_gpuadmit:
                api.apply(hook_path, webhook)
                api.wait(lambda: "affinity" in api.create(PODS, pod(0, "probe"), dry_run=True)
                         ["spec"], 30, "gpuadmit called")
            else:
                api.delete(hook_path)
                api.wait(lambda: "affinity" not in api.create(PODS, pod(0, "probe"),
                                                              dry_run=True)["spec"],
                         30, "gpuadmit no longer called")

        rates = []
        for r in args.rates.split(","):
            if r == "max":
                configure(False)
                sustained = closed_loop(api, args.seconds, "max")
                clear(api)
                log("closed loop, no webhook: %.0f pods/s" % sustained)
                rates.append(int(sustained * 0.9))  # 90%: sustained, not saturated
            else:
                rates.append(int(r))
        for rate in rates:
            for round_ in range(args.rounds):
                for with_gpuadmit in (False, True) if round_ % 2 == 0 else (True, False):
                    configure(with_gpuadmit)
                    before = webhook_histogram(api)
                    cpu_before = cpu_of(plane)
                    own_before = own_review_seconds(plane.gpuadmit_ports["gpuadmit"][1])
                    tag = "r%d-%d-%s" % (rate, round_, "g" if with_gpuadmit else "n")
                    latencies, errors, wall = open_loop(api, rate, args.seconds, tag)
                    after = webhook_histogram(api)
                    cpu_after = cpu_of(plane)
                    own_after = own_review_seconds(plane.gpuadmit_ports["gpuadmit"][1])
                    own_calls = own_after[0] - own_before[0]
                    calls = after[1] - before[1]
                    row = {"rate": rate, "round": round_,
                           "config": "gpuadmit" if with_gpuadmit else "none",
                           "created": len(latencies), "errors": len(errors),
                           "throughput": len(latencies) / wall,
                           "p50_ms": percentile(latencies, 0.50) * 1000,
                           "p99_ms": percentile(latencies, 0.99) * 1000,
                           "webhook_calls": calls,
                           "webhook_within_5ms": ((after[0] - before[0]) / calls) if calls
                           else None,
                           "webhook_mean_ms": ((after[2] - before[2]) / calls * 1000) if calls
                           else None,
                           "gpuadmit_own_mean_ms": ((own_after[1] - own_before[1]) / own_calls
                                                    * 1000) if own_calls else None,
                           # CPU milliseconds per pod created, per component, over the phase.
                           "cpu_ms_per_pod": {n: round((cpu_after[n] - cpu_before[n]) * 1000 /
                                                       max(1, len(latencies)), 3)
                                              for n in cpu_after}}
                    results.append(row)
                    log(json.dumps(row))
                    clear(api)
    finally:
        for line in plane.failures():
            print(line, file=sys.stderr)
        plane.stop()
    report(results)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def report(results):
    print("| rate (pods/s) | config | created | throughput | create p50 (ms) | create p99 (ms) "
          "| webhook calls within 5 ms | webhook mean (ms) | gpuadmit's own decision (ms) "
          "| CPU per pod: apiserver / gpuadmit / all (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    by_rate = {}
    for r in results:
        by_rate.setdefault(r["rate"], {}).setdefault(r["config"], []).append(r)
        within = "%.1f%%" % (100 * r["webhook_within_5ms"]) if r["webhook_within_5ms"] is not None \
            else "-"
        mean = "%.2f" % r["webhook_mean_ms"] if r["webhook_mean_ms"] is not None else "-"
        own = "%.3f" % r["gpuadmit_own_mean_ms"] if r.get("gpuadmit_own_mean_ms") else "-"
        cpu = r["cpu_ms_per_pod"]
        print("| %d | %s | %d | %.1f | %.1f | %.1f | %s | %s | %s | %.2f / %.2f / %.2f |" % (
            r["rate"], r["config"], r["created"], r["throughput"], r["p50_ms"], r["p99_ms"],
            within, mean, own, cpu["kube-apiserver"], cpu["gpuadmit"], sum(cpu.values())))
    print()
    print("| rate | p99 gpuadmit / none | p50 gpuadmit / none | throughput gpuadmit / none "
          "| gpuadmit's calls within 5 ms |")
    print("|---|---|---|---|---|")
    for rate, configs in sorted(by_rate.items()):
        g, n = configs.get("gpuadmit", []), configs.get("none", [])
        if not g or not n:
            continue

        def mean(rows, key):
            return sum(r[key] for r in rows) / len(rows)

        calls = sum(r["webhook_calls"] for r in g)
        within = sum(r["webhook_within_5ms"] * r["webhook_calls"] for r in g if r["webhook_calls"])
        print("| %d | %.2f | %.2f | %.3f | %.1f%% |" % (
            rate, mean(g, "p99_ms") / mean(n, "p99_ms"), mean(g, "p50_ms") / mean(n, "p50_ms"),
            mean(g, "throughput") / mean(n, "throughput"), 100 * within / calls if calls else 0))


if __name__ == "__main__":
    sys.exit(main())
