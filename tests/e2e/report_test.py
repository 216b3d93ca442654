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
Cases: text, JSON, the same metrics from Prometheus (below), the same report over the fake API
server (--kubeconfig), bad input (usage errors exit 2, files that do not load exit 3, each with a
message that says what), --help.
Prometheus (--prometheus): a fake one in this process (http.server on 127.0.0.1, a port the
kernel picks, started and stopped around the case) answers GET /api/v1/query for the one query
shape gpuadmit sends, `max by (Hostname,hostname,gpu,UUID,modelName,GPU_I_PROFILE,GPU_I_ID)
(METRIC)` per DCGM metric, from the same exposition text: the n-th query of a metric from the
n-th reading. `--samples 4 --interval 0.001` (the interval must be above 0) over the four
readings gives the output of the four --dcgm-file runs, byte for byte in JSON and text (the
window's spacing, 1 ms against 15 s, shows in neither); `--samples 2` that of two files. Also:
the requests sent, a URL path prefix, a 500 (Prometheus' JSON error, and plain text), an answer
with no DCGM series and an unreachable port each exit 3 with a message naming the URL.
Prints `ok - NAME` / `not ok - NAME: REASON` per check, then `N passed, M failed`.
"""
import argparse
import copy
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
          "%s to %s (1 GPU)" % (T4_COPY, T4) in lines, lines)
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


# --- A fake Prometheus: GET /api/v1/query over recorded exposition text -----------------------

SAMPLE_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?$')
LABEL_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
# The one query shape gpuadmit sends (webhook/sources/prometheus_source.cc): `max by (L,...) (M)`.
MAX_BY = re.compile(r'^max by \(([A-Za-z0-9_,]+)\) \(([A-Za-z_:][A-Za-z0-9_:]*)\)$')
# The labels the reader groups by: the node labels (GpuReadOptions::node_labels), then the device
# labels (kDeviceLabels). A change there shows up as "not ok - prometheus: the queries sent".
BY_LABELS = "Hostname,hostname,gpu,UUID,modelName,GPU_I_PROFILE,GPU_I_ID"
DCGM_METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED",
                "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"]


def parse_exposition(text):
    """[(metric, {label: value}, value text)] of the sample lines; comments and blanks skipped."""
    samples = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_LINE.match(line)
        if not m:
            raise ValueError("not a sample line: %r" % line)
        labels = {k: re.sub(r'\\(.)', lambda e: "\n" if e.group(1) == "n" else e.group(1), v)
                  for k, v in LABEL_PAIR.findall(m.group(2) or "")}
        samples.append((m.group(1), labels, m.group(3)))
    return samples


class FakePrometheus:
    """Prometheus' instant-query API on 127.0.0.1, port chosen by the kernel.

    `readings` are exposition texts, oldest first: the n-th query of a metric is answered from
    reading n (the last one once they run out), so `--samples N` reads them in turn whatever
    order the queries come in. `prefix` is the path the API is served under ("" or "/prom").
    `fail` set to "json" answers every query 500 with Prometheus' JSON error body, "text" 500
    with a plain-text body. Every request is recorded in `requests` as (method, path, params).
    """

    def __init__(self, readings, prefix=""):
        self.readings = [parse_exposition(t) for t in readings]
        self.prefix = prefix
        self.fail = None
        self.requests = []
        self.served = {}  # metric -> queries answered
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the reader asks for
            timeout = 10  # an idle keep-alive connection does not outlive the test

            def log_message(self, *_):
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                params = urllib.parse.parse_qs(url.query, keep_blank_values=True)
                status, body, kind = fake.answer(url.path, params)
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802: gpuadmit sends GET; a POST is recorded, refused
                with fake.lock:
                    fake.requests.append(("POST", self.path, {}))
                self.send_error(405)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def reset(self, fail=None):
        with self.lock:
            self.fail, self.requests, self.served = fail, [], {}

    @staticmethod
    def error(status, error_type, message):
        return status, json.dumps({"status": "error", "errorType": error_type,
                                   "error": message}), "application/json"

    def answer(self, path, params):
        with self.lock:
            self.requests.append(("GET", path, params))
            if path != self.prefix + "/api/v1/query":
                return 404, "404 page not found\n", "text/plain; charset=utf-8"
            if self.fail == "json":
                return self.error(500, "internal", "the fake fails on purpose")
            if self.fail == "text":
                return 500, "upstream exploded\n", "text/plain; charset=utf-8"
            query = params.get("query", [""])
            m = MAX_BY.match(query[0]) if len(query) == 1 else None
            if not m:
                return self.error(400, "bad_data", "the fake understands only max by (...) (M), "
                                  "not %r" % query)
            by, metric = m.group(1).split(","), m.group(2)
            n = self.served.get(metric, 0)
            self.served[metric] = n + 1
            reading = self.readings[min(n, len(self.readings) - 1)]
        # max by (by) (metric): one series per distinct value of the `by` labels, which alone it
        # keeps (an empty label is an absent one); its value the largest, in the text it had.
        groups = {}
        for name, labels, value in reading:
            if name != metric:
                continue
            key = tuple((label, labels[label]) for label in by if labels.get(label, ""))
            if key not in groups or float(value) > float(groups[key]):
                groups[key] = value
        result = [{"metric": dict(key), "value": [round(time.time(), 3), value]}
                  for key, value in groups.items()]
        return 200, json.dumps({"status": "success",
                                "data": {"resultType": "vector", "result": result}}), \
            "application/json"


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def case_prometheus(args, p):
    """--prometheus against the fake: the same report as --dcgm-file over the same readings."""
    readings = [p["prom"], p["prom"], p["busy"], p["prom"]]
    with FakePrometheus([read_text(r) for r in readings]) as prom:
        # The fake itself: reading 3 holds GPU 0 at 100, as the exposition does.
        util = prom.answer("/api/v1/query", {"query": ["max by (gpu) (DCGM_FI_DEV_GPU_UTIL)"]})
        util = [(r["metric"]["gpu"], r["value"][1])
                for r in json.loads(util[1])["data"]["result"]]
        check("prometheus: the fake answers max by (gpu) from the exposition",
              util == [("0", "0"), ("1", "0")], util)
        prom.reset()

        for fmt in ("json", "text"):
            files = report(args, "--cluster", p["cluster"], *metric_flags(p), "-o", fmt)
            prom.reset()  # from the first reading again
            live = report(args, "--cluster", p["cluster"], "--prometheus", prom.url,
                          "--samples", "4", "--interval", "0.001",
                          "--gpuadmit-metrics", p["scrape"], "-o", fmt)
            check("prometheus -o %s: exit 0" % fmt, live.returncode == 0,
                  (live.returncode, live.stderr))
            if fmt == "json" and live.returncode == 0:
                got, want = json.loads(live.stdout), json.loads(files.stdout)
                for section in ("consolidation", "timeSlicing", "migPressure", "thresholds"):
                    check("prometheus -o json: %s as from the 4 --dcgm-file readings" % section,
                          got.get(section) == want.get(section),
                          (got.get(section), want.get(section)))
                gpus = got["timeSlicing"]["gpus"]
                check("prometheus -o json: GPU 0 bursty over the 4 samples -> 4 replicas",
                      [(g["gpu"], g["points"], g["meanUtilizationPercent"],
                        g["maxUtilizationPercent"], g["recommendedReplicas"]) for g in gpus] ==
                      [(0, 4, 25.0, 100.0, 4), (1, 4, 0.0, 0.0, 2)], gpus)
            check("prometheus -o %s: the whole output as from the files" % fmt,
                  live.stdout == files.stdout, (live.stdout[:300], files.stdout[:300]))

        sent = prom.requests  # of the -o text run
        check("prometheus: 4 samples x 6 metrics, each a GET of /api/v1/query",
              len(sent) == 24 and all(m == "GET" and path == "/api/v1/query"
                                      for m, path, _ in sent), sent[:3])
        check("prometheus: the queries sent",
              sorted({q for _, _, params in sent for q in params.get("query", [])}) ==
              sorted("max by (%s) (%s)" % (BY_LABELS, m) for m in DCGM_METRICS)
              and all(params.get("timeout") == ["5s"] for _, _, params in sent),
              sorted({(tuple(params.get("query", [])), tuple(params.get("timeout", [])))
                      for _, _, params in sent}))

        # Two samples: the first two readings, both idle -> one 2-point window, no burst.
        prom.reset()
        two = report(args, "--cluster", p["cluster"], "--prometheus", prom.url,
                     "--samples", "2", "--interval", "0.001", "-o", "json")
        files = report(args, "--cluster", p["cluster"], "--dcgm-file", p["prom"],
                       "--dcgm-file", p["prom"], "-o", "json")
        check("prometheus --samples 2: the report of two --dcgm-file readings",
              two.returncode == 0 and two.stdout == files.stdout,
              (two.returncode, two.stderr, two.stdout[:300]))

        # A path prefix (Thanos, a reverse proxy) is kept before /api/v1/query.
        prom.reset()
        prom.prefix = "/prometheus"
        prefixed = report(args, "--cluster", p["cluster"], "--prometheus",
                          prom.url + "/prometheus/", "-o", "json")
        check("prometheus: a URL path prefix is queried under it",
              prefixed.returncode == 0 and
              {path for _, path, _ in prom.requests} == {"/prometheus/api/v1/query"},
              (prefixed.returncode, prefixed.stderr, {path for _, path, _ in prom.requests}))
        prom.prefix = ""

        prom.reset(fail="json")
        failed = report(args, "--cluster", p["cluster"], "--prometheus", prom.url, "-o", "json")
        check("prometheus answering 500 (JSON error): exits 3 with the status and its error",
              failed.returncode == 3 and failed.stdout == "" and prom.url in failed.stderr
              and "HTTP 500" in failed.stderr
              and "internal: the fake fails on purpose" in failed.stderr,
              (failed.returncode, failed.stderr))
        check("prometheus answering 500: stops at the first failed query",
              len(prom.requests) == 1, prom.requests)
        prom.reset(fail="text")
        failed = report(args, "--cluster", p["cluster"], "--prometheus", prom.url,
                        "--samples", "3", "--interval", "0.001")
        check("prometheus answering 500 (plain text): exits 3 quoting HTTP 500 and the body",
              failed.returncode == 3 and failed.stdout == ""
              and "HTTP 500: upstream exploded" in failed.stderr
              and "/api/v1/query DCGM_FI_DEV_GPU_UTIL" in failed.stderr,
              (failed.returncode, failed.stderr))

        prom.reset()
        prom.readings = [[]]  # a Prometheus that scrapes no dcgm-exporter: empty vectors
        empty = report(args, "--cluster", p["cluster"], "--prometheus", prom.url, "-o", "json")
        check("prometheus without DCGM series: exits 3 saying so, as an empty --dcgm-file",
              empty.returncode == 3 and empty.stdout == ""
              and prom.url + ": no DCGM GPU series" in empty.stderr,
              (empty.returncode, empty.stderr))

    gone = "http://127.0.0.1:%d" % closed_port()
    started = time.monotonic()
    down = report(args, "--cluster", p["cluster"], "--prometheus", gone, "-o", "json")
    check("prometheus unreachable: exits 3 naming the URL and saying it cannot connect, at once",
          down.returncode == 3 and down.stdout == "" and gone in down.stderr
          and "cannot connect" in down.stderr
          and time.monotonic() - started < 10, (down.returncode, down.stderr))


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
        (["--cluster", p["cluster"], "--prometheus", "http://x", "--interval", "0"],
         "--interval must be seconds above 0"),
        (["--cluster", p["cluster"], "--prometheus", "http://x", "--samples", "0"],
         "--samples must be a whole number from 1 to 1000"),
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
          helped.returncode == 0 and "Usage: gpuadmit report [--cluster FILE" in helped.stdout
          and "--underused-utilization PCT" in helped.stdout and "(default 30)" in helped.stdout,
          helped.stdout[-600:])


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
        case_prometheus(args, p)
        case_live(args, p, tmp)
        case_errors(args, p, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
