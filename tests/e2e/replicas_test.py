#!/usr/bin/env python3
"""Three replicas, one ledger (issue 16): `gpuadmit serve --leader-elect` processes against the
fake API server process (gpuadmit_fake_api), on loopback.

    tests/e2e/replicas_test.py --gpuadmit build/gpuadmit \
        --fake-api build/tests/fakes/gpuadmit_fake_api --source-dir .

The cluster is the demo cluster with filler pods, so that FREE (4) mig-2g.20gb devices are free;
every review asks for one (tests/fixtures/gpu/kubectl-pod.json, a new uid each). A review "counts
on a device" when its answer keeps 2g.20gb and reserves it (no fallback annotation).
  unreachable leader: r0 leads but advertises a closed port: r1 decides locally, each answer
    200 with a warning, counted as leader_failed;
  SIGTERM on the leader: the Lease released, r1 leads within 2 s;
  one leader: with r2 and r3 up, exactly one of the three has gpuadmit_leader 1;
  forged marks: the followers forward with their certificate; the same mark sent by a client
    without one is ignored (and counted) by the leader, and forwarded by a follower;
  the race: 64 concurrent reviews, round robin over the three: exactly FREE count on a device;
  SIGKILL on the leader under load: a new leader within the lease duration, every request
    answered 200, the answers of the gap decided locally and counted;
  before: three replicas without --leader-elect, the same race: how many count on a device
    (printed; at least FREE).
Timing flags shorten the Lease (3 s, renew 2 s, retry 0.5 s); the waits poll with deadlines.
"""

import argparse
import base64
import copy
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from checks import check, summary
from loopback import free_port, wait_for

FREE = 4
MIG2 = "nvidia.com/mig-2g.20gb"
FALLBACK = "gpuadmit.io/fallback"
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
PROCS = []


class Env:
    pass


E = Env()


class Replica:
    def __init__(self, name, elect=True, advertise_port=None):
        self.name, self.port = name, free_port()
        self.err_path = os.path.join(E.tmp, "%s-%d.err" % (name, self.port))
        args = [E.gpuadmit, "serve", "--kubeconfig", E.kubeconfig, "--policy", E.policy,
                "--tls-cert", E.crt, "--tls-key", E.key, "--listen", "127.0.0.1:%d" % self.port]
        if elect:
            args += ["--leader-elect", "--leader-election-namespace", "gpuadmit", "--id", name,
                     "--advertise", "127.0.0.1:%d" % (advertise_port or self.port),
                     "--leader-elect-lease-duration", str(LEASE),
                     "--leader-elect-renew-deadline", str(RENEW),
                     "--leader-elect-retry-period", str(RETRY)]
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        PROCS.append(self.proc)
        self.ready = self.wait_ready()

    def conn(self, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=E.ctx)

    def get(self, path):
        c = self.conn(5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def wait_ready(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if self.get("/readyz")[0] == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        return False

    def metric(self, name):
        try:
            text = self.get("/metrics")[1]
        except (OSError, http.client.HTTPException):
            return None
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def leading(self):
        return self.metric("gpuadmit_leader") == 1

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def review_body(i):
    r = copy.deepcopy(E.review)
    uid = "00000000-0000-4000-8000-%012d" % i
    r["request"]["uid"] = uid
    r["request"]["object"]["metadata"]["name"] = "race-%d" % i
    r["request"]["object"]["metadata"]["uid"] = uid
    return json.dumps(r).encode()


FORWARDED = 'gpuadmit_forwarded_reviews_total{outcome="answered"}'


def follows_leader(replica, i):
    """True when a CPU-only review sent to `replica` was forwarded to the leader and answered:
    the replica has read the Lease and follows. CPU-only: it reserves nothing."""
    r = json.loads(review_body(i))
    for c in r["request"]["object"]["spec"]["containers"]:
        c["resources"] = {}
    before = replica.metric(FORWARDED) or 0
    try:
        status, _ = post(replica, json.dumps(r).encode())
    except (OSError, http.client.HTTPException):
        return False
    return status == 200 and (replica.metric(FORWARDED) or 0) > before


def post(replica, body, conn=None):
    c = conn or replica.conn()
    try:
        c.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        if conn is None:
            c.close()


def counts_on_device(body):
    """The answer keeps 2g.20gb and reserves it: no fallback annotation, a reservation."""
    resp = json.loads(body)["response"]
    if not resp.get("patch"):
        return False
    ops = json.loads(base64.b64decode(resp["patch"]))
    text = json.dumps(ops)
    return "gpuadmit.io/reservation" in text and FALLBACK not in text


def forged_marks(leader, follower):
    """The replicas' forwarded mark from this client (no peer certificate): the leader counts
    and ignores it; the follower does not take the review as forwarded, so it forwards it to
    the leader as any other review."""
    ignored = "gpuadmit_forward_marks_ignored_total"
    r = json.loads(review_body(9000))
    for c in r["request"]["object"]["spec"]["containers"]:
        c["resources"] = {}
    marked = {"Content-Type": "application/json", "Gpuadmit-Forwarded": "authenticated"}
    before = leader.metric(ignored) or 0
    c = leader.conn()
    c.request("POST", "/mutate", body=json.dumps(r).encode(), headers=marked)
    status = c.getresponse().status
    c.close()
    check("a forwarded mark sent without a peer's certificate: the leader answers 200, ignores "
          "the mark and counts it", status == 200 and (leader.metric(ignored) or 0) == before + 1,
          "%r %r" % (status, leader.metric(ignored)))
    forwarded = follower.metric(FORWARDED) or 0
    c = follower.conn()
    c.request("POST", "/mutate", body=json.dumps(r).encode(), headers=marked)
    status = c.getresponse().status
    c.close()
    check("... the follower forwards that review to the leader rather than deciding it",
          status == 200 and (follower.metric(FORWARDED) or 0) == forwarded + 1,
          "%r %r" % (status, follower.metric(FORWARDED)))


def race(replicas, first_id):
    """64 concurrent reviews, round robin over `replicas`: (statuses, bodies)."""
    n = 64
    barrier = threading.Barrier(n, timeout=30)
    results = [None] * n

    def one(i):
        body = review_body(first_id + i)
        c = replicas[i % len(replicas)].conn()
        c.connect()
        try:
            barrier.wait()
            results[i] = post(None, body, conn=c)
        except Exception as e:  # reported by the check
            results[i] = (None, repr(e).encode())
        finally:
            c.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--fake-api", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    E.gpuadmit, src = os.path.abspath(a.gpuadmit), os.path.abspath(a.source_dir)
    tmp = tempfile.TemporaryDirectory(prefix="gpuadmit-replicas-")
    E.tmp = tmp.name
    subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", E.tmp], check=True,
                   capture_output=True, timeout=60)
    E.crt, E.key = os.path.join(E.tmp, "tls.crt"), os.path.join(E.tmp, "tls.key")
    E.ctx = ssl.create_default_context(cafile=os.path.join(E.tmp, "ca.crt"))
    E.policy = os.path.join(src, "manifests/examples/policy.yaml")
    with open(os.path.join(src, "tests/fixtures/gpu/kubectl-pod.json")) as f:
        E.review = json.load(f)
    # A pod without GPUs: answered the same wherever it is decided, and reserves nothing.
    with open(os.path.join(src, "tests/fixtures/admission/v1-pod-create-sleep-100ms.json"),
              "rb") as f:
        E.plain_review = f.read()
    # The demo cluster leaves 7 of gpu-medium's 12 mig-2g.20gb free to a decision (5 running);
    # three fillers leave FREE.
    with open(os.path.join(src, "manifests/examples/demo-cluster.json")) as f:
        cluster = json.load(f)
    for i in range(3):
        cluster["items"].append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "filler-%d" % i, "namespace": "e2e",
                         "uid": "00000000-f111-4000-8000-%012d" % i},
            "spec": {"nodeName": "gpu-medium", "containers": [{
                "name": "c", "image": "busybox",
                "resources": {"limits": {MIG2: "1"}, "requests": {MIG2: "1"}}}]},
            "status": {"phase": "Running"}})
    cluster_path = os.path.join(E.tmp, "cluster.json")
    with open(cluster_path, "w") as f:
        json.dump(cluster, f)
    E.kubeconfig = os.path.join(E.tmp, "kubeconfig")
    api = subprocess.Popen([a.fake_api, "--cluster", cluster_path, "--token", "replicas",
                            "--kubeconfig", E.kubeconfig], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    PROCS.append(api)
    try:
        line = api.stdout.readline().decode()
        if not check("fake API: ready", line.startswith("ready "), line + api.stderr.read(300)
                     .decode() if api.poll() is not None else line):
            return summary()
        run(a)
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
    return summary()


def run(a):
    next_id = [1000]

    def ids(n):
        next_id[0] += n
        return next_id[0] - n

    # Unreachable leader: r0 leads and advertises a port nobody listens on.
    r0 = Replica("r0", advertise_port=free_port())
    if not check("r0: ready", r0.ready, r0.stderr()[-500:]):
        return
    check("r0: leads alone", wait_for(r0.leading, LEASE + 5), r0.stderr()[-500:])
    r1 = Replica("r1")
    if not check("r1: ready", r1.ready, r1.stderr()[-500:]):
        return
    wait_for(lambda: not r1.leading(), 1)
    answers = [post(r1, E.plain_review) for _ in range(5)]
    ok = all(s == 200 and b"without the leader" in b for s, b in answers)
    check("unreachable leader: r1 answers 200 itself, with a warning", ok,
          repr([(s, b[:200]) for s, b in answers if not (s == 200 and b"without" in b)]))
    dry = json.loads(E.plain_review)
    dry["request"]["dryRun"] = True
    status, body = post(r1, json.dumps(dry).encode())
    check("dryRun: decided where it arrives, no forwarding, no warning",
          status == 200 and b"without the leader" not in body, "%d %r" % (status, body[:200]))
    failed = r1.metric('gpuadmit_forward_failures_total{reason="leader_failed"}')
    check("unreachable leader: counted as leader_failed", failed is not None and failed >= 5,
          "counter %r" % failed)

    # SIGTERM on the leader: the Lease is released and r1 takes over within 2 s.
    t0 = time.monotonic()
    r0.proc.send_signal(signal.SIGTERM)
    took_over = wait_for(r1.leading, 5)
    took = time.monotonic() - t0
    check("SIGTERM on the leader: r1 leads within 2 s (lease %.0f s)" % LEASE,
          took_over and took <= 2.0, "took %.2f s, leading %r" % (took, took_over))
    check("SIGTERM on the leader: r0 exits 0", r0.proc.wait(timeout=15) == 0,
          r0.stderr()[-300:])
    check("SIGTERM on the leader: r0 says the lease was released",
          "lease released" in r0.stderr(), r0.stderr()[-300:])

    r2, r3 = Replica("r2"), Replica("r3")
    if not check("r2, r3: ready", r2.ready and r3.ready, r2.stderr()[-300:] + r3.stderr()[-300:]):
        return
    three = [r1, r2, r3]
    # The newcomers have read the Lease: each forwards a review to r1 and passes its answer on.
    follow = wait_for(lambda: follows_leader(r2, ids(1)) and follows_leader(r3, ids(1)), 10)
    check("r2, r3: follow r1 (a review forwarded and answered)", follow,
          r2.stderr()[-300:] + r3.stderr()[-300:])
    leaders = [r.name for r in three if r.leading()]
    check("one leader among three", leaders == ["r1"], "leaders %r" % leaders)
    forged_marks(r1, r2)

    results = race(three, ids(64))
    statuses = [s for s, _ in results]
    counted = sum(1 for s, b in results if s == 200 and counts_on_device(b))
    check("race: 64 reviews over three replicas all answered 200",
          statuses == [200] * 64, "statuses %r" % statuses)
    check("race: exactly %d count on a device (one ledger)" % FREE, counted == FREE,
          "%d counted" % counted)
    fwd = sum(r.metric('gpuadmit_forwarded_reviews_total{outcome="answered"}') or 0
              for r in (r2, r3))
    check("race: the followers forwarded their reviews", fwd >= 64 * 2 // 3 - 2, "%r" % fwd)
    print("# race with --leader-elect: %d of 64 count on a device (%d free)" % (counted, FREE))

    # SIGKILL on the leader under load: a new leader within the lease; every request answered.
    stop, bad, sent = threading.Event(), [], [0]

    def load(target):
        while not stop.is_set():
            try:
                s, b = post(target, review_body(ids(1)))
                sent[0] += 1
                if s != 200:
                    bad.append((target.name, s, b[:200]))
            except (OSError, http.client.HTTPException) as e:
                bad.append((target.name, repr(e)))

    threads = [threading.Thread(target=load, args=(r,)) for r in (r2, r3)]
    for t in threads:
        t.start()
    wait_for(lambda: sent[0] >= 20 or bad, 10)  # the load is flowing
    before = sum(r.metric('gpuadmit_forward_failures_total{reason="leader_failed"}') or 0 +
                 (r.metric('gpuadmit_forward_failures_total{reason="no_leader"}') or 0)
                 for r in (r2, r3))
    t0 = time.monotonic()
    r1.proc.send_signal(signal.SIGKILL)
    new_leader = wait_for(lambda: r2.leading() or r3.leading(), LEASE + 3)
    took = time.monotonic() - t0
    served = sent[0]
    wait_for(lambda: sent[0] >= served + 20 or bad, 10)  # and flows on past the new leader
    stop.set()
    for t in threads:
        t.join(30)
    check("SIGKILL on the leader: a new leader within the lease duration (%.0f s) and a retry"
          % LEASE, new_leader and took <= LEASE + RETRY + 0.5, "took %.2f s" % took)
    check("SIGKILL on the leader: every request answered 200 (%d sent)" % sent[0], not bad,
          repr(bad[:3]))
    after = sum((r.metric('gpuadmit_forward_failures_total{reason="leader_failed"}') or 0) +
                (r.metric('gpuadmit_forward_failures_total{reason="no_leader"}') or 0)
                for r in (r2, r3))
    check("SIGKILL on the leader: the gap's answers decided locally and counted",
          after > before, "failures %r -> %r" % (before, after))
    for r in (r2, r3):
        r.proc.send_signal(signal.SIGTERM)
        r.proc.wait(timeout=15)

    # Before: three independent replicas, the same race.
    plain = [Replica("p%d" % i, elect=False) for i in range(3)]
    if not check("three replicas without --leader-elect: ready", all(p.ready for p in plain)):
        return
    results = race(plain, ids(64))
    before_counted = sum(1 for s, b in results if s == 200 and counts_on_device(b))
    check("before: without --leader-elect at least %d count on a device" % FREE,
          before_counted >= FREE, "%d" % before_counted)
    print("# race without --leader-elect (three ledgers): %d of 64 count on a device (%d free)"
          % (before_counted, FREE))


if __name__ == "__main__":
    sys.exit(main())
