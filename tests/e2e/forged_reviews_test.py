#!/usr/bin/env python3
"""Forged reviews cannot hold a real pod's devices: `gpuadmit serve` on make run's demo cluster,
without client authentication, reached by a real caller and a forger from two loopback
addresses.

    tests/e2e/forged_reviews_test.py --gpuadmit build/gpuadmit --source-dir .

Every review asks one mig-2g.20gb (tests/fixtures/gpu/kubectl-pod.json, a new uid each). A review
"counts on a device" when its answer keeps 2g.20gb and reserves it (no fallback annotation).
  the flood: FLOOD reviews from 127.0.0.2, as fast as one connection sends them; they count on
    every free 2g.20gb device, and the rest fall back;
  the real caller, from 127.0.0.1, after the flood: each of the FREE free devices is still
    there for it, the next real pod falls back (its own reservations still count: no device is
    promised twice), and none of its answers waits;
  the same flood from 127.0.0.1 (a new server): the caller's own reservations count, so the
    next review falls back, as every caller's did when they all shared one ledger;
  the mark of a forwarded review sent by a client that is no replica: ignored, counted.
The last line gives the figure: forged reviews sent, devices they held, real pods affected.
"""

import argparse
import base64
import copy
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time

from checks import check, summary
from loopback import free_port

FLOOD = 100
FALLBACK = "gpuadmit.io/fallback"
REAL, FORGER = "127.0.0.1", "127.0.0.2"
PROCS = []


class Env:
    pass


E = Env()


class Server:
    def __init__(self, name):
        self.port, self.metrics_port = free_port(), free_port()
        self.err_path = os.path.join(E.tmp, "%s.err" % name)
        args = [E.gpuadmit, "serve", "--cluster", E.cluster, "--policy", E.policy,
                "--tls-cert", E.crt, "--tls-key", E.key,
                "--listen", "127.0.0.1:%d" % self.port,
                "--metrics-listen", "127.0.0.1:%d" % self.metrics_port]
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        PROCS.append(self.proc)
        self.ready = self.wait_ready()

    def conn(self, source):
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=E.ctx,
                                           source_address=(source, 0))

    def wait_ready(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def metric(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else 0.0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def failure(self):
        with open(self.err_path, "rb") as f:
            tail = f.read().decode("utf-8", "replace")[-2000:]
        return "exit %r; stderr: %s" % (self.proc.poll(), tail)


def review_body(i):
    r = copy.deepcopy(E.review)
    uid = "00000000-0000-4000-9000-%012d" % i
    r["request"]["uid"] = uid
    r["request"]["object"]["metadata"]["name"] = "pod-%d" % i
    r["request"]["object"]["metadata"]["uid"] = uid
    return json.dumps(r).encode()


def counts_on_device(body):
    resp = json.loads(body)["response"]
    if not resp.get("patch"):
        return False
    text = base64.b64decode(resp["patch"]).decode()
    return "gpuadmit.io/reservation" in text and FALLBACK not in text


def send(server, source, first, n, headers=None):
    """`n` reviews on one kept-alive connection from `source`: (answers counting on a device,
    statuses, the slowest answer in seconds)."""
    c = server.conn(source)
    counted, statuses, slowest = 0, [], 0.0
    try:
        for i in range(n):
            started = time.monotonic()
            c.request("POST", "/mutate", body=review_body(first + i),
                      headers={"Content-Type": "application/json", **(headers or {})})
            r = c.getresponse()
            body = r.read()
            slowest = max(slowest, time.monotonic() - started)
            statuses.append(r.status)
            counted += r.status == 200 and counts_on_device(body)
    finally:
        c.close()
    return counted, statuses, slowest


def free_2g():
    """mig-2g.20gb devices the demo cluster has free: allocatable less what its pods ask."""
    with open(E.cluster) as f:
        items = json.load(f)["items"]  # kubectl get nodes,pods -o json
    key = "nvidia.com/mig-2g.20gb"
    total = sum(int(n["status"].get("allocatable", {}).get(key, 0))
                for n in items if n["kind"] == "Node")
    used = sum(int(c.get("resources", {}).get("requests", {}).get(key, 0))
               for p in items if p["kind"] == "Pod" and p.get("spec", {}).get("nodeName")
               and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
               for c in p["spec"].get("containers", []))
    return total - used


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    E.gpuadmit, src = os.path.abspath(a.gpuadmit), os.path.abspath(a.source_dir)
    tmp = tempfile.TemporaryDirectory(prefix="gpuadmit-forged-")
    E.tmp = tmp.name
    subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", E.tmp], check=True,
                   capture_output=True, timeout=60)
    E.crt, E.key = os.path.join(E.tmp, "tls.crt"), os.path.join(E.tmp, "tls.key")
    E.ctx = ssl.create_default_context(cafile=os.path.join(E.tmp, "ca.crt"))
    E.ctx.check_hostname = False  # the certificate names the Service; we reach 127.0.0.1
    E.policy = os.path.join(src, "manifests/examples/policy.yaml")
    E.cluster = os.path.join(src, "manifests/examples/demo-cluster.json")
    with open(os.path.join(src, "tests/fixtures/gpu/kubectl-pod.json")) as f:
        E.review = json.load(f)
    free = free_2g()
    check("the demo cluster has mig-2g.20gb free (%d)" % free, free > 0)
    try:
        server = Server("scoped")
        if not check("serve starts on the demo cluster", server.ready, server.failure()):
            return summary()
        held, statuses, _ = send(server, FORGER, 0, FLOOD)
        check("flood: %d reviews from %s answered 200" % (FLOOD, FORGER),
              statuses == [200] * FLOOD, "%r" % sorted(set(statuses)))
        check("flood: the forger's reviews counted on every free device (%d of %d)"
              % (held, free), held == free, "%d" % held)
        real, statuses, slowest = send(server, REAL, 1000, free + 1)
        affected = free - min(real, free)  # real pods that fell back with a device free
        check("after the flood, each of the %d free devices is still there for the real caller "
              "(%d kept 2g.20gb)" % (free, real), real == free and statuses == [200] * (free + 1),
              "%d of %d; %r" % (real, free + 1, statuses))
        check("the real caller's own reservations count: its pod %d falls back" % (free + 1),
              real <= free, "%d counted on a device" % real)
        check("no real review waited (slowest %.3f s)" % slowest, slowest < 2.0)
        ignored_before = server.metric("gpuadmit_forward_marks_ignored_total")
        _, statuses, _ = send(server, FORGER, 2000, 1, {"Gpuadmit-Forwarded": "authenticated"})
        ignored = server.metric("gpuadmit_forward_marks_ignored_total") - ignored_before
        check("a forwarded mark from a client that is no replica is ignored and counted (%d)"
              % ignored, statuses == [200] and ignored == 1, "%r %r" % (statuses, ignored))
        server.stop()

        shared = Server("shared")
        if not check("serve starts again", shared.ready, shared.failure()):
            return summary()
        same, _, _ = send(shared, REAL, 3000, free)
        after, _, _ = send(shared, REAL, 4000, 1)
        check("from the real caller's own address, %d reviews hold the %d free devices and the "
              "next falls back" % (same, free), same == free and after == 0,
              "%d, then %d" % (same, after))
        shared.stop()
        print("# figure: %d forged reviews sent, %d devices they held, %d real pods affected "
              "(of %d that fit)" % (FLOOD, held, affected, free))
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait(5)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
